// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

func idleTimeout(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestValidateIdleTimeout(t *testing.T) {
	bounded := withPolicy(func(p *SessionLimits) { p.MaxIdleTimeout = time.Hour })
	tests := []struct {
		name    string
		policy  SessionLimits
		timeout *metav1.Duration
		want    []string
	}{
		{name: "none", policy: DefaultSessionLimits()},
		{name: "0s is none", policy: DefaultSessionLimits(), timeout: idleTimeout(0)},
		{name: "at the minimum, four intervals", policy: DefaultSessionLimits(), timeout: idleTimeout(4 * time.Minute)},
		{name: "below the minimum", policy: DefaultSessionLimits(), timeout: idleTimeout(4*time.Minute - time.Second),
			want: []string{"FieldValueInvalid spec.idleTimeout"}},
		{name: "negative", policy: DefaultSessionLimits(), timeout: idleTimeout(-time.Minute),
			want: []string{"FieldValueInvalid spec.idleTimeout"}},
		{name: "no bound without a maximum", policy: DefaultSessionLimits(), timeout: idleTimeout(48 * time.Hour)},
		{name: "at the maximum", policy: bounded, timeout: idleTimeout(time.Hour)},
		{name: "above the maximum", policy: bounded, timeout: idleTimeout(time.Hour + time.Second),
			want: []string{"FieldValueInvalid spec.idleTimeout"}},
		{name: "none where a maximum requires one", policy: bounded, timeout: idleTimeout(0),
			want: []string{"FieldValueInvalid spec.idleTimeout"}},
		{name: "a shorter interval allows a shorter timeout", policy: withPolicy(func(p *SessionLimits) { p.LastUsedInterval = 2 * time.Second }),
			timeout: idleTimeout(8 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSession()
			s.Spec.IdleTimeout = tt.timeout
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSession(s, tt.policy))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateLastUsedAt(t *testing.T) {
	now := created.Add(10 * time.Minute)
	at := func(d time.Duration) *metav1.Time { return ptrTime(created.Add(d)) }
	live := func(s *clustergate.Session) {
		s.Status.ExpiresAt = at(time.Hour)
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "SessionReady",
			LastTransitionTime: metav1.NewTime(created)}}
	}
	tests := []struct {
		name      string
		old       func(*clustergate.Session)
		was, next *metav1.Time
		want      []string
	}{
		{name: "first use", old: live, next: at(5 * time.Minute)},
		{name: "moves later", old: live, was: at(5 * time.Minute), next: at(6 * time.Minute)},
		{name: "unchanged on an expired session", old: func(s *clustergate.Session) { live(s); s.Status.ExpiresAt = at(time.Minute) },
			was: at(30 * time.Second), next: at(30 * time.Second)},
		{name: "moves earlier", old: live, was: at(6 * time.Minute), next: at(5 * time.Minute),
			want: []string{"FieldValueInvalid status.lastUsedAt"}},
		{name: "removed", old: live, was: at(6 * time.Minute),
			want: []string{"FieldValueForbidden status.lastUsedAt"}},
		{name: "in the future beyond clock skew", old: live, next: at(11 * time.Minute),
			want: []string{"FieldValueInvalid status.lastUsedAt"}},
		{name: "within clock skew", old: live, next: ptrTime(now.Add(clockSkew))},
		{name: "after the idle deadline", old: func(s *clustergate.Session) { live(s); s.Spec.IdleTimeout = idleTimeout(5 * time.Minute) },
			was: at(4 * time.Minute), next: at(9 * time.Minute),
			want: []string{"FieldValueForbidden status.lastUsedAt"}},
		{name: "before the idle deadline", old: func(s *clustergate.Session) { live(s); s.Spec.IdleTimeout = idleTimeout(5 * time.Minute) },
			was: at(6 * time.Minute), next: at(9 * time.Minute)},
		{name: "after expiry", old: func(s *clustergate.Session) { live(s); s.Status.ExpiresAt = at(time.Minute) },
			next: at(30 * time.Second), want: []string{"FieldValueForbidden status.lastUsedAt"}},
		{name: "awaiting approval", old: func(s *clustergate.Session) {}, next: at(time.Minute),
			want: []string{"FieldValueForbidden status.lastUsedAt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validSession()
			old.ResourceVersion = "1"
			tt.old(old)
			old.Status.LastUsedAt = tt.was
			s := old.DeepCopy()
			s.Status.LastUsedAt = tt.next
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionStatusUpdate(s, old, now))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdlePolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*SessionLimits)
		wantErr bool
	}{
		{name: "default: none", mutate: func(*SessionLimits) {}},
		{name: "a default", mutate: func(p *SessionLimits) { p.IdleTimeout = 30 * time.Minute }},
		{name: "a default below the minimum", mutate: func(p *SessionLimits) { p.IdleTimeout = time.Minute }, wantErr: true},
		{name: "a default above the maximum", mutate: func(p *SessionLimits) { p.IdleTimeout, p.MaxIdleTimeout = time.Hour, 30*time.Minute }, wantErr: true},
		{name: "a maximum below the minimum", mutate: func(p *SessionLimits) { p.MaxIdleTimeout = 3 * time.Minute }, wantErr: true},
		{name: "an interval below a second", mutate: func(p *SessionLimits) { p.LastUsedInterval = time.Millisecond }, wantErr: true},
		{name: "a test's interval and timeout", mutate: func(p *SessionLimits) { p.LastUsedInterval, p.IdleTimeout = time.Second, 4*time.Second }},
		{name: "negative", mutate: func(p *SessionLimits) { p.MaxIdleTimeout = -time.Second }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := withPolicy(tt.mutate).Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestDefaultIdleTimeout(t *testing.T) {
	tests := []struct {
		name          string
		dflt, maximum time.Duration
		want          time.Duration
	}{
		{name: "none"},
		{name: "the default", dflt: 30 * time.Minute, maximum: time.Hour, want: 30 * time.Minute},
		{name: "the maximum when only it is set", maximum: time.Hour, want: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := SessionLimits{IdleTimeout: tt.dflt, MaxIdleTimeout: tt.maximum}
			if got := p.DefaultIdleTimeout(); got != tt.want {
				t.Errorf("DefaultIdleTimeout() = %s, want %s", got, tt.want)
			}
		})
	}
}
