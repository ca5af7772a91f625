// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// Accept headers that real clients send, copied from their sources.
const (
	// kubectl get, printing a table.
	acceptKubectlTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	// kubectl -o json|yaml, kubectl delete, client-go with JSON.
	acceptJSON = "application/json"
	// client-go with protobuf: clientsets that prefer it (ours included),
	// kube-controller-manager's clients.
	acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"
	// The metadata client, used by the namespace controller and the garbage
	// collector to list, watch and delete every resource of the cluster.
	acceptMetadata     = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	acceptMetadataList = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	// A protobuf table, which nobody can encode: the server must fall back.
	acceptProtobufTable = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	// Anything.
	acceptAny = "*/*"
)

// protobufMagic starts every protobuf-encoded Kubernetes object.
var protobufMagic = []byte("k8s\x00")

// TestContentNegotiation sends what kubectl, client-go, the metadata client,
// the namespace controller and the garbage collector send, for every verb
// they use, and checks that each gets an answer it can read: a client that
// accepts an encoding the server has is never refused.
func TestContentNegotiation(t *testing.T) {
	ctx := context.Background()
	transport, err := rest.TransportFor(config)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	const ns = "negotiation"

	type verb string
	const (
		get, list, watch, del, deleteCollection verb = "get", "list", "watch", "delete", "deletecollection"
	)
	tests := []struct {
		client string
		verb   verb
		accept string
		// wantType is the Content-Type of the answer (parameters aside);
		// wantKind a kind the body must name (%s: the resource's kind). A
		// delete without finalizers answers with a Status.
		wantType, wantKind string
	}{
		{"kubectl get", get, acceptKubectlTable, "application/json", `"kind":"Table"`},
		{"kubectl get", list, acceptKubectlTable, "application/json", `"kind":"Table"`},
		{"kubectl get -w", watch, acceptKubectlTable, "application/json", `"kind":"Table"`},
		{"kubectl -o json", get, acceptJSON, "application/json", `"kind":"%s"`},
		{"kubectl -o json", list, acceptJSON, "application/json", `"kind":"%sList"`},
		{"kubectl -o json -w", watch, acceptJSON, "application/json", `"kind":"%s"`},
		{"kubectl delete", del, acceptJSON, "application/json", `"kind":"Status"`},
		{"kubectl delete --all", deleteCollection, acceptJSON, "application/json", `"kind":"%sList"`},
		{"client-go protobuf", get, acceptProtobuf, "application/vnd.kubernetes.protobuf", "%s"},
		{"client-go protobuf", list, acceptProtobuf, "application/vnd.kubernetes.protobuf", "%sList"},
		{"client-go protobuf", watch, acceptProtobuf, "application/vnd.kubernetes.protobuf", "%s"},
		{"client-go protobuf", del, acceptProtobuf, "application/vnd.kubernetes.protobuf", "Status"},
		{"client-go protobuf", deleteCollection, acceptProtobuf, "application/vnd.kubernetes.protobuf", "%sList"},
		{"metadata client", get, acceptMetadata, "application/vnd.kubernetes.protobuf", "PartialObjectMetadata"},
		{"namespace controller, garbage collector", list, acceptMetadataList, "application/vnd.kubernetes.protobuf", "PartialObjectMetadataList"},
		{"garbage collector", watch, acceptMetadata, "application/vnd.kubernetes.protobuf", "PartialObjectMetadata"},
		{"garbage collector", del, acceptProtobuf, "application/vnd.kubernetes.protobuf", "Status"},
		{"namespace controller", deleteCollection, acceptProtobuf, "application/vnd.kubernetes.protobuf", "%sList"},
		{"protobuf table", list, acceptProtobufTable, "application/json", `"kind":"Table"`},
		{"any", get, acceptAny, "application/json", `"kind":"%s"`},
		{"any", list, acceptAny, "application/json", `"kind":"%sList"`},
	}
	resources := []struct {
		resource, kind string
		create         func(name string, labels map[string]string) error
	}{
		{"sessions", "Session", func(name string, labels map[string]string) error {
			s := newSession(name)
			s.Labels = labels
			_, err := clientset(t).ClustergateV1alpha1().Sessions(ns).Create(ctx, s, metav1.CreateOptions{})
			return err
		}},
		{"gardenerclusterkubeconfigs", "GardenerClusterKubeconfig", func(name string, labels map[string]string) error {
			_, err := clientset(t).ClustergateV1alpha1().GardenerClusterKubeconfigs(ns).Create(ctx, &v1alpha1.GardenerClusterKubeconfig{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Spec: v1alpha1.GardenerClusterKubeconfigSpec{
					Shoot:      v1alpha1.ShootReference{Name: name},
					Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Name: name}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, r := range resources {
		if err := r.create("kept", nil); err != nil {
			t.Fatal(err)
		}
		for i, tc := range tests {
			t.Run(fmt.Sprintf("%s/%s/%s", r.resource, tc.client, tc.verb), func(t *testing.T) {
				// Each delete takes an object of its own.
				name, selector := "kept", fmt.Sprintf("case=%d", i)
				if tc.verb == del || tc.verb == deleteCollection {
					name = fmt.Sprintf("case-%d", i)
					if err := r.create(name, map[string]string{"case": fmt.Sprint(i)}); err != nil {
						t.Fatal(err)
					}
				}
				path := fmt.Sprintf("%s/apis/clustergate.dev/v1alpha1/namespaces/%s/%s", config.Host, ns, r.resource)
				method := http.MethodGet
				switch tc.verb {
				case get:
					path += "/" + name
				case watch:
					path += "?watch=true&resourceVersion=0&timeoutSeconds=1"
				case del:
					path, method = path+"/"+name, http.MethodDelete
				case deleteCollection:
					path, method = path+"?labelSelector="+selector, http.MethodDelete
				}
				req, err := http.NewRequestWithContext(ctx, method, path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Accept", tc.accept)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				// A watch from resourceVersion 0 starts with the objects that
				// exist; its first event is enough.
				body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				if err != nil && tc.verb != watch {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
				}
				if got, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); got != tc.wantType {
					t.Errorf("Content-Type %q, want %s", resp.Header.Get("Content-Type"), tc.wantType)
				}
				wantKind := strings.ReplaceAll(tc.wantKind, "%s", r.kind)
				if !bytes.Contains(body, []byte(wantKind)) {
					t.Errorf("body does not name %s: %.300q", wantKind, body)
				}
				if tc.wantType == "application/vnd.kubernetes.protobuf" && tc.verb != watch && !bytes.HasPrefix(body, protobufMagic) {
					t.Errorf("body is not a protobuf object: %.100q", body)
				}
			})
		}
	}
}
