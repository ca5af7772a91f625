// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"net"
	"slices"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

func TestClusterDNS(t *testing.T) {
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	endpoints := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = services.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "wl"}})
	_ = endpoints.Add(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "db-x", Namespace: "wl", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.2"}, Hostname: ptrTo("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}},
			{Addresses: []string{"10.244.0.3"}, Hostname: ptrTo("db-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(false)}},
		},
	})
	d := &clusterDNS{gateway: net.IPv4(10, 244, 0, 1), services: corelisters.NewServiceLister(services),
		slices: discoverylisters.NewEndpointSliceLister(endpoints)}
	for _, c := range []struct {
		name  string
		rcode dnsmessage.RCode
		want  []string
	}{
		{"db.wl.svc.cluster.local.", dnsmessage.RCodeSuccess, []string{"10.244.0.2"}},
		{"DB-0.db.wl.svc.cluster.local.", dnsmessage.RCodeSuccess, []string{"10.244.0.2"}},
		{"db-1.db.wl.svc.cluster.local.", dnsmessage.RCodeNameError, nil},
		{"kubernetes.default.svc.cluster.local.", dnsmessage.RCodeSuccess, []string{"10.244.0.1"}},
		{"other.wl.svc.cluster.local.", dnsmessage.RCodeNameError, nil},
		{"example.com.", dnsmessage.RCodeNameError, nil},
	} {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
		_ = b.StartQuestions()
		_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(c.name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
		query, _ := b.Finish()
		var msg dnsmessage.Message
		if err := msg.Unpack(d.answer(query)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, a := range msg.Answers {
			ip := a.Body.(*dnsmessage.AResource).A
			got = append(got, net.IP(ip[:]).String())
		}
		if msg.ID != 7 || msg.RCode != c.rcode || !slices.Equal(got, c.want) {
			t.Errorf("%s: id %d, %s, %v; want %s, %v", c.name, msg.ID, msg.RCode, got, c.rcode, c.want)
		}
	}
}
