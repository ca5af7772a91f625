// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func TestRegistry(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		run    func(t *testing.T, r *Tracker, clk *clocktesting.FakeClock)
	}{
		{name: "end cancels every connection with its reason", run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			a, releaseA, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseA()
			b, releaseB, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseB()
			other, releaseOther, err := r.Open(context.Background(), "s2", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseOther()
			r.End("s1", ErrDeleted)
			for _, ctx := range []context.Context{a, b} {
				if !errors.Is(context.Cause(ctx), ErrDeleted) {
					t.Errorf("cause = %v, want ErrDeleted", context.Cause(ctx))
				}
			}
			if other.Err() != nil {
				t.Errorf("another session's connection ended")
			}
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrDeleted) {
				t.Errorf("open after end: %v, want ErrDeleted", err)
			}
		}},
		{name: "stop ends every session's connections and refuses new ones", run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			a, releaseA, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer releaseA()
			b, releaseB, err := r.Open(context.Background(), "s2", "bob", start.Add(time.Hour))
			must(t, err)
			defer releaseB()
			r.End("s3", ErrDeleted)
			r.Stop()
			for _, ctx := range []context.Context{a, b} {
				if !errors.Is(context.Cause(ctx), ErrStopping) {
					t.Errorf("cause = %v, want ErrStopping", context.Cause(ctx))
				}
			}
			if _, _, err := r.Open(context.Background(), "s4", "alice", start.Add(time.Hour)); !errors.Is(err, ErrStopping) {
				t.Errorf("open after stop: %v, want ErrStopping", err)
			}
			if !apierrors.IsServiceUnavailable(statusFor(ErrStopping, Target{Namespace: "sre", Name: "fix"})) {
				t.Errorf("a refusal of a stopping replica is not a 503")
			}
		}},
		{name: "the timer at expiresAt ends connections", run: func(t *testing.T, r *Tracker, clk *clocktesting.FakeClock) {
			ctx, release, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Minute))
			must(t, err)
			defer release()
			clk.Step(59 * time.Second)
			if ctx.Err() != nil {
				t.Fatal("ended before expiry")
			}
			clk.Step(time.Second)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("not ended at expiry")
			}
			if !errors.Is(context.Cause(ctx), ErrExpired) {
				t.Errorf("cause = %v, want ErrExpired", context.Cause(ctx))
			}
		}},
		{name: "not ready refuses until resumed", run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			ctx, release, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer release()
			r.End("s1", ErrNotReady)
			if !errors.Is(context.Cause(ctx), ErrNotReady) {
				t.Errorf("cause = %v, want ErrNotReady", context.Cause(ctx))
			}
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrNotReady) {
				t.Errorf("open while not ready: %v, want ErrNotReady", err)
			}
			r.Resume("s1")
			_, again, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			again()
		}},
		{name: "resume does not lift a deletion", run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			r.End("s1", ErrDeleted)
			r.Resume("s1")
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrDeleted) {
				t.Errorf("open after resume of a deleted session: %v, want ErrDeleted", err)
			}
		}},
		{name: "ended sessions are forgotten after a while", run: func(t *testing.T, r *Tracker, clk *clocktesting.FakeClock) {
			r.End("s1", ErrDeleted)
			clk.Step(tombstoneTTL)
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				r.mu.Lock()
				defer r.mu.Unlock()
				return len(r.sessions) == 0, nil
			}); err != nil {
				t.Errorf("the ended session is still remembered after %s", tombstoneTTL)
			}
		}},
		{name: "expired sessions are refused", run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			if _, _, err := r.Open(context.Background(), "s1", "alice", start); !errors.Is(err, ErrExpired) {
				t.Errorf("got %v, want ErrExpired", err)
			}
		}},
		{name: "per-session limit", limits: Limits{PerSession: 2}, run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			_, r1, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			_, r2, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer r2()
			if _, _, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour)); !errors.Is(err, ErrTooManyForSession) {
				t.Errorf("third: %v, want ErrTooManyForSession", err)
			}
			r1()
			_, r3, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			r3()
			if n := r.OpenConnections("s1"); n != 1 {
				t.Errorf("open connections = %d, want 1", n)
			}
		}},
		{name: "per-owner limit spans sessions", limits: Limits{PerOwner: 1}, run: func(t *testing.T, r *Tracker, _ *clocktesting.FakeClock) {
			_, release, err := r.Open(context.Background(), "s1", "alice", start.Add(time.Hour))
			must(t, err)
			defer release()
			if _, _, err := r.Open(context.Background(), "s2", "alice", start.Add(time.Hour)); !errors.Is(err, ErrTooManyForOwner) {
				t.Errorf("got %v, want ErrTooManyForOwner", err)
			}
			_, other, err := r.Open(context.Background(), "s3", "bob", start.Add(time.Hour))
			must(t, err)
			other()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			tt.run(t, NewTracker(clk, tt.limits), clk)
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// responder records the error a handler reports.
// responder keeps the error it is given and, with w, writes it as a JSON
// Status the way the API server's responder does.
type responder struct {
	err error
	w   http.ResponseWriter
}

func (r *responder) Object(int, runtime.Object) {}
func (r *responder) Error(err error) {
	r.err = err
	var status apierrors.APIStatus
	if r.w != nil && errors.As(err, &status) {
		r.w.Header().Set("Content-Type", "application/json")
		r.w.WriteHeader(int(status.Status().Code))
		_ = json.NewEncoder(r.w).Encode(status.Status())
	}
}

// backend is a TLS server standing in for a target kube-apiserver.
func backend(tb testing.TB, h http.HandlerFunc) (*url.URL, *http.Transport) {
	tb.Helper()
	srv := httptest.NewTLSServer(h)
	tb.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/prefix")
	tr := srv.Client().Transport.(*http.Transport).Clone()
	// Upgraded streams speak HTTP/1.1.
	tr.ForceAttemptHTTP2 = false
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	return u, tr
}

// released waits up to timeout until r holds no connection of target's
// session, and says whether it came to that.
func released(r *Tracker, timeout time.Duration) bool {
	return wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return r.OpenConnections("s1") == 0, nil
	}) == nil
}

// target is session sre/fix of alice, expiring in an hour, at u.
func target(u *url.URL, tr *http.Transport) Target {
	return Target{UID: "s1", Namespace: "sre", Name: "fix", Owner: "alice", ExpiresAt: time.Now().Add(time.Hour), Backend: u, Transport: tr}
}
