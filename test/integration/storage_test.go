// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects are kept in etcd as protobuf; a Session written as JSON by an
// earlier version is still read.
func TestStorageIsProtobuf(t *testing.T) {
	ctx := context.Background()
	etcd, err := clientv3.New(clientv3.Config{Endpoints: etcdServers, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	sessions := clientset(t).ClustergateV1alpha1().Sessions("storage")
	if _, err := sessions.Create(ctx, newSession("stored"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key, value := storedSession(ctx, t, etcd, "/storage/stored")
	if !bytes.HasPrefix(value, protobufMagic) {
		t.Fatalf("%s is stored as %.40q, want protobuf", key, value)
	}

	// The same Session as an earlier version wrote it, as JSON, under
	// another name.
	legacy, err := sessions.Get(ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy.Name, legacy.UID, legacy.ResourceVersion = "legacy", "", ""
	legacy.APIVersion, legacy.Kind = "clustergate.dev/v1alpha1", "Session"
	data, err := json.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Put(ctx, strings.TrimSuffix(key, "stored")+"legacy", string(data)); err != nil {
		t.Fatal(err)
	}
	got, err := sessions.Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a Session stored as JSON: %v", err)
	}
	if got.Spec.Owner.Username != legacy.Spec.Owner.Username || got.Spec.TTL != legacy.Spec.TTL {
		t.Errorf("a Session stored as JSON reads as %+v, want %+v", got.Spec, legacy.Spec)
	}
}

// storedSession finds the etcd key of a Session by its namespace/name
// suffix and returns it with its value.
func storedSession(ctx context.Context, t *testing.T, etcd *clientv3.Client, suffix string) (string, []byte) {
	t.Helper()
	resp, err := etcd.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.Contains(k, "/sessions/") && strings.HasSuffix(k, suffix) {
			return k, kv.Value
		}
	}
	t.Fatalf("no Session key ends in %s", suffix)
	return "", nil
}
