// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"testing"
	"time"
)

// TestRenewal: credentials that end before the session are renewed
// renewBefore ahead, or at half their lifetime when that is later; others
// are not.
func TestRenewal(t *testing.T) {
	expiresAt := created.Add(time.Hour)
	for _, tt := range []struct {
		name                string
		notBefore, notAfter time.Time
		want                time.Time
	}{
		{name: "no certificate (a token)"},
		{name: "outlasts the session", notBefore: created, notAfter: expiresAt.Add(time.Second)},
		{name: "ends with the session", notBefore: created, notAfter: expiresAt},
		{name: "ends before: renewBefore ahead", notBefore: created, notAfter: created.Add(10 * time.Minute), want: created.Add(8 * time.Minute)},
		{name: "Kubernetes' signer backdates by 5 minutes: renewBefore ahead", notBefore: created.Add(-5 * time.Minute), notAfter: created.Add(10 * time.Minute),
			want: created.Add(8 * time.Minute)},
		{name: "a signer's 70 s certificate: at half its lifetime, not at once", notBefore: created, notAfter: created.Add(70 * time.Second),
			want: created.Add(35 * time.Second)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := renewal(tt.notBefore, tt.notAfter, expiresAt); !got.Equal(tt.want) {
				t.Errorf("renewal = %s, want %s", got, tt.want)
			}
		})
	}
}
