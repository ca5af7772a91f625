// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import "testing"

// TestRequestMatchesKey: a CSR matches the key it was made with, and
// nothing else.
func TestRequestMatchesKey(t *testing.T) {
	key, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	request, err := CertificateRequest(key, "clustergate:session:alice", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name         string
		request, key []byte
		want         bool
	}{
		{"the key it was made with", request, key, true},
		{"another key", request, other, false},
		{"no request", nil, key, false},
		{"not a request", key, key, false},
		{"no key", request, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := RequestMatchesKey(tt.request, tt.key); got != tt.want {
				t.Errorf("RequestMatchesKey = %v, want %v", got, tt.want)
			}
		})
	}
}
