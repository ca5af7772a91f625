// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package embeddedetcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestRestartKeepsData starts an etcd, writes a key, stops it and starts it
// again on the same directory at other ports: the key must still be there.
func TestRestartKeepsData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd: make test-unit runs it")
	}
	dir := t.TempDir()
	ctx := context.Background()

	put := func(e *Etcd, key, value string) {
		t.Helper()
		c := newClient(t, e)
		if _, err := c.Put(ctx, key, value); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	get := func(e *Etcd, key string) string {
		t.Helper()
		resp, err := newClient(t, e).Get(ctx, key)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if len(resp.Kvs) != 1 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}

	first := start(t, dir)
	put(first, "/k", "v")
	first.Close()

	second := start(t, dir)
	defer second.Close()
	if got := get(second, "/k"); got != "v" {
		t.Fatalf("after restart /k = %q, want %q", got, "v")
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, u := range []string{"http://0.0.0.0:2379", "http://example.com:2379", "::"} {
		if e, err := Start(context.Background(), t.TempDir(), u); err == nil {
			e.Close()
			t.Errorf("Start(%q) succeeded, want an error", u)
		}
	}
}

func start(t *testing.T, dir string) *Etcd {
	t.Helper()
	u, err := FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	e, err := Start(context.Background(), dir, u)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return e
}

func newClient(t *testing.T, e *Etcd) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
