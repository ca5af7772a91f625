// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTargetTransport checks that a session's transport reaches a target
// over HTTP/2 and leaves compression to the client: the target is asked
// for gzip only when the client asked, and a compressed answer reaches the
// client as the target sent it.
func TestTargetTransport(t *testing.T) {
	body := bytes.Repeat([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"}},`), 1<<20/64)
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	_, _ = zw.Write(body)
	_ = zw.Close()
	var asked string
	target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.Header.Get("Accept-Encoding")
		if asked == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(compressed.Bytes())
			return
		}
		_, _ = w.Write(body)
	}))
	target.EnableHTTP2 = true
	target.StartTLS()
	defer target.Close()
	kubeconfig, err := ClientKubeconfig(target.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: target.Certificate().Raw}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := newBackend(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, acceptEncoding string
		wantAsked            string
		want                 []byte
	}{
		{"a client not asking for gzip gets the body plain", "", "", body},
		{"a client asking for gzip gets the target's gzip", "gzip", "gzip", compressed.Bytes()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, target.URL+"/api/v1/configmaps", nil)
			if tt.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", tt.acceptEncoding)
			}
			resp, err := backend.Transport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 {
				t.Errorf("protocol %s, want HTTP/2", resp.Proto)
			}
			if asked != tt.wantAsked {
				t.Errorf("the target was asked for Accept-Encoding %q, want %q", asked, tt.wantAsked)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("the client got %d bytes (Content-Encoding %q), want the %d the target sent", len(got), resp.Header.Get("Content-Encoding"), len(tt.want))
			}
		})
	}
}
