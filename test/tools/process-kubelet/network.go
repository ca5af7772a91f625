// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
)

// network gives each pod a network namespace and an address of a private
// /24, as the bridge CNI plugin does: a Linux bridge on the host holds the
// gateway address, and one veth pair per pod joins the pod's namespace
// (eth0) to it. Pods reach each other over the bridge without the host
// forwarding packets, and the host (the kube-apiserver, the tests) reaches
// every pod over the bridge's connected route.
//
// Every namespace and link it creates is named after prefix, so that a run
// can remove what it (or a crashed run with the same prefix) left behind.
type network struct {
	prefix  string
	bridge  string
	subnet  *net.IPNet
	gateway net.IP

	mu   sync.Mutex
	used map[string]bool
}

// sandbox is one pod's network: its namespace, its host-side link and address.
type sandbox struct {
	NetNS, HostLink string
	IP              net.IP
}

// NetNSPath is where `ip netns` keeps the namespace, for setns.
func (s *sandbox) NetNSPath() string { return "/var/run/netns/" + s.NetNS }

// newNetwork plans a network of prefix in the IPv4 /24 cidr; prefix is at
// most 6 characters so that link names stay under Linux's 15.
func newNetwork(prefix, cidr string) (*network, error) {
	if len(prefix) == 0 || len(prefix) > 6 {
		return nil, fmt.Errorf("network prefix %q: want 1 to 6 characters", prefix)
	}
	ip, subnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	if ones, bits := subnet.Mask.Size(); ones != 24 || bits != 32 || ip.To4() == nil {
		return nil, fmt.Errorf("pod CIDR %s: want an IPv4 /24", cidr)
	}
	gw := append(net.IP(nil), subnet.IP.To4()...)
	gw[3] = 1
	return &network{prefix: prefix, bridge: prefix + "br", subnet: subnet, gateway: gw, used: map[string]bool{}}, nil
}

// ip runs the ip command of iproute2.
func ip(args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// setup removes what an earlier run with the same prefix left behind and
// creates the bridge with the gateway address.
func (n *network) setup() error {
	n.teardown()
	ones, _ := n.subnet.Mask.Size()
	for _, args := range [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", n.gateway, ones), "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// teardown removes every namespace and link named after the prefix, the
// bridge last.
func (n *network) teardown() {
	for _, ns := range listNames("netns", "list") {
		if strings.HasPrefix(ns, n.prefix+"-") {
			_ = ip("netns", "del", ns)
		}
	}
	for _, link := range listNames("-o", "link", "show") {
		if strings.HasPrefix(link, n.prefix) && link != n.bridge {
			_ = ip("link", "del", link)
		}
	}
	_ = ip("link", "del", n.bridge)
}

// listNames lists namespaces ("netns list") or links ("-o link show") by name.
func listNames(args ...string) []string {
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		return nil
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := fields[0]
		if args[0] == "-o" && len(fields) > 1 {
			// "2: name@peer: <...>"
			name = strings.TrimSuffix(fields[1], ":")
			name, _, _ = strings.Cut(name, "@")
		}
		names = append(names, name)
	}
	return names
}

// allocate reserves the lowest free pod address (.2 to .254).
func (n *network) allocate() (net.IP, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := 2; i < 255; i++ {
		a := append(net.IP(nil), n.subnet.IP.To4()...)
		a[3] = byte(i)
		if !n.used[a.String()] {
			n.used[a.String()] = true
			return a, nil
		}
	}
	return nil, fmt.Errorf("no free address in %s", n.subnet)
}

// add creates the sandbox of the pod with uid: namespace, veth pair, address
// and default route through the gateway.
func (n *network) add(uid string) (_ *sandbox, err error) {
	short := strings.ReplaceAll(uid, "-", "")
	if len(short) > 8 {
		short = short[:8]
	}
	addr, err := n.allocate()
	if err != nil {
		return nil, err
	}
	sb := &sandbox{NetNS: n.prefix + "-" + short, HostLink: n.prefix + short, IP: addr}
	defer func() {
		if err != nil {
			n.remove(sb)
		}
	}()
	ones, _ := n.subnet.Mask.Size()
	for _, args := range [][]string{
		{"netns", "add", sb.NetNS},
		{"link", "add", sb.HostLink, "type", "veth", "peer", "name", "eth0", "netns", sb.NetNS},
		{"link", "set", sb.HostLink, "master", n.bridge, "up"},
		{"-n", sb.NetNS, "addr", "add", fmt.Sprintf("%s/%d", addr, ones), "dev", "eth0"},
		{"-n", sb.NetNS, "link", "set", "lo", "up"},
		{"-n", sb.NetNS, "link", "set", "eth0", "up"},
		{"-n", sb.NetNS, "route", "add", "default", "via", n.gateway.String()},
	} {
		if err := ip(args...); err != nil {
			return nil, err
		}
	}
	return sb, nil
}

// remove deletes the sandbox's namespace, which takes the veth pair with it,
// and frees its address. Its processes must have ended.
func (n *network) remove(sb *sandbox) {
	_ = ip("netns", "del", sb.NetNS)
	_ = ip("link", "del", sb.HostLink) // gone already unless the namespace is held
	n.mu.Lock()
	delete(n.used, sb.IP.String())
	n.mu.Unlock()
}
