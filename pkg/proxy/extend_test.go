// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
	"github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
)

// endsAt steps clk to each of the given moments and says after which one
// ctx ended, with ErrExpired; -1 when it never did.
func endsAt(t *testing.T, ctx context.Context, clk *clocktesting.FakeClock, moments ...time.Time) int {
	t.Helper()
	for i, m := range moments {
		clk.SetTime(m)
		select {
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), ErrExpired) {
				t.Errorf("cause = %v, want ErrExpired", context.Cause(ctx))
			}
			return i
		case <-time.After(200 * time.Millisecond):
		}
	}
	return -1
}

func TestExtend(t *testing.T) {
	oldExpiry, newExpiry := start.Add(time.Minute), start.Add(5*time.Minute)
	moments := []time.Time{oldExpiry, newExpiry.Add(-time.Second), newExpiry}
	tests := []struct {
		name string
		// extend runs before or after the connection opens.
		before, after func(r *Tracker)
		want          int
	}{
		{name: "not extended: ends at the old expiry", want: 0},
		{name: "extended while open: ends at the new expiry", after: func(r *Tracker) { r.Extend("s1", newExpiry) }, want: 2},
		{name: "extended before it opened from an older read", before: func(r *Tracker) { r.Extend("s1", newExpiry) }, want: 2},
		{name: "an earlier expiry changes nothing", after: func(r *Tracker) { r.Extend("s1", start.Add(30*time.Second)) }, want: 0},
		{name: "extended twice", after: func(r *Tracker) { r.Extend("s1", newExpiry.Add(-time.Second)); r.Extend("s1", newExpiry) }, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := NewTracker(clk, Limits{})
			if tt.before != nil {
				tt.before(r)
			}
			ctx, release, err := r.Open(context.Background(), "s1", "alice", oldExpiry)
			must(t, err)
			defer release()
			if tt.after != nil {
				tt.after(r)
			}
			if got := endsAt(t, ctx, clk, moments...); got != tt.want {
				t.Errorf("ended after step %d, want %d", got, tt.want)
			}
		})
	}
}

// TestEndWithSessionsExtends moves a session's expiry later through the
// informer: its open connection runs past the old expiry.
func TestEndWithSessionsExtends(t *testing.T) {
	s := session("s1", metav1.ConditionTrue, false)
	s.Status.ExpiresAt = &metav1.Time{Time: start.Add(time.Minute)}
	client := fake.NewSimpleClientset(s)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(start)
	r := NewTracker(clk, Limits{})
	informer := factory.Clustergate().V1alpha1().Sessions().Informer()
	must(t, r.EndWithSessions(informer, func(types.UID) {}))
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(stop.Done())
	factory.WaitForCacheSync(stop.Done())

	ctx, release, err := r.Open(context.Background(), s.UID, "alice", s.Status.ExpiresAt.Time)
	must(t, err)
	defer release()
	extended := s.DeepCopy()
	extended.Status.ExpiresAt = &metav1.Time{Time: start.Add(5 * time.Minute)}
	_, err = client.ClustergateV1alpha1().Sessions("sre").UpdateStatus(context.Background(), extended, metav1.UpdateOptions{})
	must(t, err)
	// The informer delivers the update on its own goroutine.
	deadline := time.Now().Add(5 * time.Second)
	for expiryOf(r, s.UID) != extended.Status.ExpiresAt.Time && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := endsAt(t, ctx, clk, start.Add(time.Minute), start.Add(5*time.Minute)); got != 1 {
		t.Errorf("ended after step %d, want 1 (the new expiry)", got)
	}
}

// expiryOf is when the tracker's timer ends a session's connections.
func expiryOf(r *Tracker, uid types.UID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.sessions[uid]; t != nil {
		return t.expiresAt
	}
	return time.Time{}
}

// TestExtendAfterEnd ends a session on this replica (its timer at the
// expiry, or End), then an extension written before the expiry arrives 2s
// late. A later expiry lifts an expiry's tombstone, so that the extended
// session is served again until its new expiry; a stale one (the same or an
// earlier expiry) does not, nor does any expiry lift a deletion or a
// session that is not ready. The request after the extension read the
// session with the new expiry, so only the tombstone can refuse it.
func TestExtendAfterEnd(t *testing.T) {
	expiry := start.Add(time.Minute)
	later := expiry.Add(10 * time.Minute)
	tests := []struct {
		name string
		// ended is why the session ended: ErrExpired by its timer, the
		// others through End.
		ended    error
		extendTo time.Time
		lifted   bool
	}{
		{name: "expired, extended later: served again", ended: ErrExpired, extendTo: later, lifted: true},
		{name: "expired, stale extension to the same expiry", ended: ErrExpired, extendTo: expiry},
		{name: "expired, stale extension to an earlier expiry", ended: ErrExpired, extendTo: expiry.Add(-time.Second)},
		{name: "deleted, extended later: still deleted", ended: ErrDeleted, extendTo: later},
		{name: "not ready, extended later: waits for Resume", ended: ErrNotReady, extendTo: later},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := NewTracker(clk, Limits{})
			conn, release, err := r.Open(context.Background(), "s1", "alice", expiry)
			must(t, err)
			defer release()
			if errors.Is(tt.ended, ErrExpired) {
				if endsAt(t, conn, clk, expiry) != 0 {
					t.Fatal("the timer did not end the session at its expiry")
				}
			} else {
				r.End("s1", tt.ended)
			}
			clk.SetTime(expiry.Add(2 * time.Second))
			if _, _, err := r.Open(context.Background(), "s1", "alice", later); !errors.Is(err, tt.ended) {
				t.Fatalf("before the extension: %v, want %v", err, tt.ended)
			}

			r.Extend("s1", tt.extendTo)
			served, releaseServed, err := r.Open(context.Background(), "s1", "alice", later)
			if !tt.lifted {
				if !errors.Is(err, tt.ended) {
					t.Errorf("after the extension: %v, want %v", err, tt.ended)
				}
				return
			}
			must(t, err)
			defer releaseServed()
			if got := endsAt(t, served, clk, later.Add(-time.Second), later); got != 1 {
				t.Errorf("the extended session's request ended after step %d, want 1 (the new expiry)", got)
			}
		})
	}
}

// TestExtendAsTheTimerFires extends a session right after its timer fired,
// before the timer's goroutine ended it: whichever of the two comes first,
// the extended session is served until its new expiry.
func TestExtendAsTheTimerFires(t *testing.T) {
	expiry := start.Add(time.Minute)
	later := expiry.Add(10 * time.Minute)
	clk := clocktesting.NewFakeClock(start)
	r := NewTracker(clk, Limits{})
	_, release, err := r.Open(context.Background(), "s1", "alice", expiry)
	must(t, err)
	defer release()
	clk.SetTime(expiry)
	r.Extend("s1", later)
	served, releaseServed, err := r.Open(context.Background(), "s1", "alice", later)
	must(t, err)
	defer releaseServed()
	if got := endsAt(t, served, clk, later.Add(-time.Second), later); got != 1 {
		t.Errorf("the extended session's request ended after step %d, want 1 (the new expiry)", got)
	}
}
