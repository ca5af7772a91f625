// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"
)

// issuerSays is an authenticator whose verdict on each token the test
// sets; it counts how often it was asked.
type issuerSays struct {
	valid map[string]bool
	asked int
}

func (i *issuerSays) AuthenticateToken(_ context.Context, token string) (*authenticator.Response, bool, error) {
	i.asked++
	if !i.valid[token] {
		return nil, false, fmt.Errorf("token %s does not verify", token)
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: "oidc:" + token}}, true, nil
}

// TestTokenCache: a verified token is answered from the cache until its
// exp or the TTL, whichever is first; failures are asked about every time;
// the cache holds at most its size.
func TestTokenCache(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	jwt := func(name string, exp time.Time) string {
		payload := fmt.Sprintf(`{"sub":%q,"exp":%d}`, name, exp.Unix())
		return "e30." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".sig"
	}
	long := jwt("long", start.Add(time.Hour))
	short := jwt("short", start.Add(3*time.Second))
	other := jwt("other", start.Add(time.Hour))
	third := jwt("third", start.Add(time.Hour))
	noExp := "e30." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"noexp"}`)) + ".sig"

	// step is one request: at at after start, with token, which the issuer
	// then says is valid or not.
	type step struct {
		at        time.Duration
		token     string
		valid     bool
		wantOK    bool
		wantAsked bool
	}
	tests := []struct {
		name  string
		size  int
		steps []step
	}{
		{name: "a hit within the TTL is not verified again", size: 10, steps: []step{
			{at: 0, token: long, valid: true, wantOK: true, wantAsked: true},
			{at: 5 * time.Second, token: long, valid: true, wantOK: true},
			{at: 9 * time.Second, token: long, valid: true, wantOK: true},
		}},
		{name: "a token the issuer no longer accepts works until the TTL, not after", size: 10, steps: []step{
			{at: 0, token: long, valid: true, wantOK: true, wantAsked: true},
			{at: 9 * time.Second, token: long, valid: false, wantOK: true},
			{at: 10 * time.Second, token: long, valid: false, wantOK: false, wantAsked: true},
			{at: 11 * time.Second, token: long, valid: false, wantOK: false, wantAsked: true},
		}},
		{name: "an entry ends at the token's exp before the TTL", size: 10, steps: []step{
			{at: 0, token: short, valid: true, wantOK: true, wantAsked: true},
			{at: 2 * time.Second, token: short, valid: true, wantOK: true},
			{at: 3 * time.Second, token: short, valid: false, wantOK: false, wantAsked: true},
		}},
		{name: "a verified token is verified again after the TTL", size: 10, steps: []step{
			{at: 0, token: long, valid: true, wantOK: true, wantAsked: true},
			{at: 10 * time.Second, token: long, valid: true, wantOK: true, wantAsked: true},
			{at: 15 * time.Second, token: long, valid: true, wantOK: true},
		}},
		{name: "failures are not cached", size: 10, steps: []step{
			{at: 0, token: other, valid: false, wantOK: false, wantAsked: true},
			{at: time.Second, token: other, valid: false, wantOK: false, wantAsked: true},
			{at: 2 * time.Second, token: other, valid: true, wantOK: true, wantAsked: true},
		}},
		{name: "a token without exp is verified every time", size: 10, steps: []step{
			{at: 0, token: noExp, valid: true, wantOK: true, wantAsked: true},
			{at: time.Second, token: noExp, valid: true, wantOK: true, wantAsked: true},
		}},
		{name: "beyond its size the least recently used token is verified again", size: 2, steps: []step{
			{at: 0, token: long, valid: true, wantOK: true, wantAsked: true},
			{at: 0, token: other, valid: true, wantOK: true, wantAsked: true},
			{at: 0, token: long, valid: true, wantOK: true},
			{at: 0, token: third, valid: true, wantOK: true, wantAsked: true},
			{at: 0, token: long, valid: true, wantOK: true},
			{at: 0, token: other, valid: true, wantOK: true, wantAsked: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			issuer := &issuerSays{valid: map[string]bool{}}
			cache := newTokenCache(issuer, clk, 10*time.Second, tt.size)
			for i, s := range tt.steps {
				clk.SetTime(start.Add(s.at))
				issuer.valid[s.token] = s.valid
				asked := issuer.asked
				resp, ok, err := cache.AuthenticateToken(context.Background(), s.token)
				if ok != s.wantOK {
					t.Errorf("step %d: ok = %v (%v), want %v", i, ok, err, s.wantOK)
				}
				if ok && resp.User.GetName() == "" {
					t.Errorf("step %d: no user", i)
				}
				if got := issuer.asked > asked; got != s.wantAsked {
					t.Errorf("step %d: issuer asked = %v, want %v", i, got, s.wantAsked)
				}
			}
			if n := cache.entries.Len(); n > tt.size {
				t.Errorf("%d entries, more than the size %d", n, tt.size)
			}
		})
	}
}
