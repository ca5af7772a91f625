// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package session

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

// TestPrepareForCreateIdleTimeout: the server's policy fills in the idle
// timeout of a session that names none; one it names, 0s included, stays.
func TestPrepareForCreateIdleTimeout(t *testing.T) {
	d := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	tests := []struct {
		name          string
		dflt, maximum time.Duration
		asked         *metav1.Duration
		want          *metav1.Duration
	}{
		{name: "no default, none asked"},
		{name: "the server's default", dflt: 30 * time.Minute, want: d(30 * time.Minute)},
		{name: "the maximum when only it is set", maximum: time.Hour, want: d(time.Hour)},
		{name: "asked for is kept", dflt: 30 * time.Minute, asked: d(10 * time.Minute), want: d(10 * time.Minute)},
		{name: "asked for none is kept", dflt: 30 * time.Minute, asked: d(0), want: d(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := validation.DefaultSessionLimits()
			policy.IdleTimeout, policy.MaxIdleTimeout = tt.dflt, tt.maximum
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre"}, Spec: clustergate.SessionSpec{IdleTimeout: tt.asked}}
			NewStrategy(registrytest.Scheme(), policy, false, "local").PrepareForCreate(context.Background(), s)
			if diff := cmp.Diff(tt.want, s.Spec.IdleTimeout); diff != "" {
				t.Errorf("spec.idleTimeout (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLastUsedCell: -o wide shows how long ago a session was used and its
// idle timeout.
func TestLastUsedCell(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		idle       *metav1.Duration
		lastUsedAt *metav1.Time
		want       string
	}{
		{name: "never used, no idle timeout", want: "<none>"},
		{name: "used", lastUsedAt: &metav1.Time{Time: now.Add(-3 * time.Minute)}, want: "3m ago"},
		{name: "used, with an idle timeout", idle: &metav1.Duration{Duration: 30 * time.Minute},
			lastUsedAt: &metav1.Time{Time: now.Add(-90 * time.Second)}, want: "90s ago (idle 30m)"},
		{name: "never used, with an idle timeout", idle: &metav1.Duration{Duration: time.Hour}, want: "<none> (idle 60m)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{Spec: clustergate.SessionSpec{IdleTimeout: tt.idle}, Status: clustergate.SessionStatus{LastUsedAt: tt.lastUsedAt}}
			if got := lastUsedCell(s, now); got != tt.want {
				t.Errorf("lastUsedCell = %q, want %q", got, tt.want)
			}
		})
	}
}
