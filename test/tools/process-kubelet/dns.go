// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// clusterDomain is the suffix of every name the node's DNS answers.
const clusterDomain = "svc.cluster.local"

// clusterDNS answers the pods' queries for cluster names on the gateway
// address, as CoreDNS's kubernetes plugin would: <service>.<namespace>.svc
// and <hostname>.<service>.<namespace>.svc (a StatefulSet's members). With
// no kube-proxy here a ClusterIP leads nowhere, so every Service resolves
// to its endpoints' pod addresses, as a headless one does; kubernetes.default
// resolves to the gateway, where the node forwards the kube-apiserver.
// Other names get NXDOMAIN: pods here reach nothing outside the cluster.
type clusterDNS struct {
	gateway  net.IP
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
}

// serve answers UDP queries on addr until ctx ends. (Answers fit in UDP:
// the Go and libc resolvers fall back to TCP only for truncated ones.)
func (d *clusterDNS) serve(ctx context.Context, addr string) error {
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := d.answer(buf[:n]); resp != nil {
				_, _ = conn.WriteTo(resp, from)
			}
		}
	}()
	return nil
}

// answer builds the response to one query; nil drops a malformed one.
func (d *clusterDNS) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	ips, known := d.resolve(q.Name.String())
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RCode: rcode})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		for _, ip := range ips {
			rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5}
			if err := b.AResource(rh, dnsmessage.AResource{A: [4]byte(ip.To4())}); err != nil {
				return nil
			}
		}
	}
	resp, err := b.Finish()
	if err != nil {
		return nil
	}
	return resp
}

// resolve finds the IPv4 addresses of a name, and whether it exists.
func (d *clusterDNS) resolve(name string) ([]net.IP, bool) {
	rest, ok := strings.CutSuffix(strings.TrimSuffix(strings.ToLower(name), "."), "."+clusterDomain)
	if !ok {
		return nil, false
	}
	parts := strings.Split(rest, ".")
	var host string
	switch len(parts) {
	case 2:
	case 3:
		host, parts = parts[0], parts[1:]
	default:
		return nil, false
	}
	svc, ns := parts[0], parts[1]
	if svc == "kubernetes" && ns == "default" && host == "" {
		return []net.IP{d.gateway}, true
	}
	if _, err := d.services.Services(ns).Get(svc); err != nil {
		return nil, false
	}
	ips := d.endpoints(ns, svc, host)
	return ips, host == "" || len(ips) > 0
}

// endpoints lists the ready addresses of a Service's EndpointSlices, only
// those of the pod with hostname host if it is set. (With
// publishNotReadyAddresses, the controller marks every endpoint ready.)
func (d *clusterDNS) endpoints(ns, svc, host string) []net.IP {
	slices, err := d.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc}))
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range s.Endpoints {
			if host != "" && (ep.Hostname == nil || *ep.Hostname != host) {
				continue
			}
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if ip := net.ParseIP(a).To4(); ip != nil {
					ips = append(ips, ip)
				}
			}
		}
	}
	return ips
}

// resolvConf is a pod's /etc/resolv.conf: the node's DNS for the cluster
// policies (the default), the pod's own dnsConfig for None.
func resolvConf(gateway, namespace, policy string, nameservers, searches []string) string {
	if policy == "None" {
		var b strings.Builder
		for _, ns := range nameservers {
			b.WriteString("nameserver " + ns + "\n")
		}
		if len(searches) > 0 {
			b.WriteString("search " + strings.Join(searches, " ") + "\n")
		}
		return b.String()
	}
	return "nameserver " + gateway + "\nsearch " + namespace + "." + clusterDomain + " " + clusterDomain +
		" cluster.local\noptions ndots:5\n"
}
