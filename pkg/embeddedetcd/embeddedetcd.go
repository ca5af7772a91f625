// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package embeddedetcd runs a single-member etcd inside the server process:
// the storage of a server started without --etcd-servers.
package embeddedetcd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// readyTimeout bounds how long a start may take before it is given up.
const readyTimeout = time.Minute

// Etcd is a running embedded etcd.
type Etcd struct {
	etcd *embed.Etcd
	// ClientURL is where the etcd serves clients.
	ClientURL string
}

// FreeLocalURL returns an http URL on 127.0.0.1 at a port that was free a
// moment ago, for an etcd listener that must be named before it starts.
func FreeLocalURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// Start starts an etcd that keeps its data in dir and serves clients at
// clientURL, which must be on the loopback interface. It returns once the
// etcd serves requests.
func Start(ctx context.Context, dir, clientURL string) (*Etcd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd data directory: %w", err)
	}
	client, err := url.Parse(clientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL: %w", err)
	}
	if ip := net.ParseIP(client.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("embedded etcd must listen on a loopback address, not %q", client.Host)
	}
	peerURL, err := FreeLocalURL()
	if err != nil {
		return nil, err
	}
	peer, _ := url.Parse(peerURL)

	cfg := embed.NewConfig()
	cfg.Name = "clustergate"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd's own info logs would drown the server's.
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(readyTimeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd was not ready within %s", readyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	klog.InfoS("Embedded etcd is serving", "clientURL", clientURL, "dataDir", dir)
	return &Etcd{etcd: e, ClientURL: clientURL}, nil
}

// Close stops the etcd and waits until it has let go of its data directory.
func (e *Etcd) Close() {
	e.etcd.Close()
}
