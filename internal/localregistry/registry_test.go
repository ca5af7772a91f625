// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localregistry

import (
	"net/http"
	"strings"
	"testing"
)

// TestStart checks that the registry binds to loopback only and answers the
// distribution API's version check; pushing and pulling images through it
// is internal/images' test.
func TestStart(t *testing.T) {
	tests := []struct {
		name    string
		options Options
		wantErr string
	}{
		{name: "free loopback port", options: Options{BlobDir: t.TempDir()}},
		{name: "IPv6 loopback", options: Options{Address: "[::1]:0", BlobDir: t.TempDir()}},
		{name: "all interfaces", options: Options{Address: "0.0.0.0:0", BlobDir: t.TempDir()}, wantErr: "only a loopback"},
		{name: "host name", options: Options{Address: "localhost:0", BlobDir: t.TempDir()}, wantErr: "only a loopback"},
		{name: "no blob directory", options: Options{}, wantErr: "no blob directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Start(tc.options)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Start: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Skipf("Start: %v (no such loopback address here?)", err)
			}
			defer r.Close()
			resp, err := http.Get("http://" + r.Host + "/v2/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /v2/: %s, want 200 OK", resp.Status)
			}
		})
	}
}
