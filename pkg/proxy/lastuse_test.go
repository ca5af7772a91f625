// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeStatus is a session's status.lastUsedAt behind a LastUseWriter: it
// keeps the writes that got through, as "write time → value" offsets from
// start, and fails those whose resourceVersion is stale, or all with err.
type fakeStatus struct {
	clock   *clocktesting.FakeClock
	mu      sync.Mutex
	version int
	value   time.Time
	writes  []string
	err     error
}

func (f *fakeStatus) write(_ context.Context, _, _, resourceVersion string, at time.Time) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	if resourceVersion != strconv.Itoa(f.version) {
		return "", apierrors.NewConflict(schema.GroupResource{Resource: "sessions"}, "s", errors.New("stale"))
	}
	f.version++
	f.value = at
	f.writes = append(f.writes, fmt.Sprintf("%s → %s", f.clock.Since(start), at.Sub(start)))
	return strconv.Itoa(f.version), nil
}

// current is the session as the informer reports it now.
func (f *fakeStatus) current() (string, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.Itoa(f.version), f.value
}

func (f *fakeStatus) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.writes...)
}

// settle lets the writes started by the last clock step finish.
func settle(r *Tracker) {
	for range 200 {
		r.uses.mu.Lock()
		busy := false
		for _, u := range r.uses.sessions {
			busy = busy || u.writing
		}
		r.uses.mu.Unlock()
		time.Sleep(time.Millisecond)
		if !busy {
			return
		}
	}
}

// TestLastUseCoalesced: a replica writes a session's last use at once the
// first time, then at most once an interval, only when the use moved past
// what the status holds; an open stream is a use at every moment, and a
// write of another replica postpones this one's turn. The informer brings
// every write back, as it does.
func TestLastUseCoalesced(t *testing.T) {
	const interval = time.Minute
	type step struct {
		at time.Duration
		do string // open, close, or other: another replica writes the moment
	}
	tests := []struct {
		name  string
		steps []step
		until time.Duration
		want  []string
	}{
		{name: "a loop of short requests: one write an interval",
			steps: func() []step {
				var out []step
				for s := time.Duration(0); s < 150*time.Second; s += 5 * time.Second {
					out = append(out, step{s, "open"}, step{s + time.Second, "close"})
				}
				return out
			}(),
			until: 4 * time.Minute,
			// At once, then at each turn the latest use.
			want: []string{"0s → 0s", "1m0s → 56s", "2m0s → 1m56s", "3m0s → 2m26s"}},
		{name: "an open stream moves lastUsedAt once an interval",
			steps: []step{{0, "open"}, {150 * time.Second, "close"}},
			until: 5 * time.Minute,
			want:  []string{"0s → 0s", "1m0s → 1m0s", "2m0s → 2m0s", "3m0s → 2m30s"}},
		{name: "a request after a quiet spell writes at once",
			steps: []step{{0, "open"}, {time.Second, "close"}, {10 * time.Minute, "open"}, {10*time.Minute + time.Second, "close"}},
			until: 15 * time.Minute,
			want:  []string{"0s → 0s", "1m0s → 1s", "10m0s → 10m0s", "11m0s → 10m1s"}},
		{name: "another replica's write postpones this one's turn",
			steps: []step{{0, "open"}, {30 * time.Second, "other"}, {31 * time.Second, "close"}},
			until: 5 * time.Minute,
			// 60s would be this replica's turn; the write seen at 30s
			// moves it to 90s.
			want: []string{"0s → 0s", "30s → 30s", "1m30s → 31s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := NewTracker(clk, Limits{})
			status := &fakeStatus{clock: clk}
			r.RecordLastUse(interval, status.write)
			target := func() Target {
				version, value := status.current()
				return Target{UID: "s1", Namespace: "sre", Name: "s", ResourceVersion: version, LastUsedAt: value}
			}
			informer := func() {
				version, value := status.current()
				r.uses.observed("s1", version, value)
			}
			steps := tt.steps
			for now := time.Duration(0); now <= tt.until; now += time.Second {
				for len(steps) > 0 && steps[0].at == now {
					switch steps[0].do {
					case "open":
						r.uses.opened(target())
					case "close":
						r.uses.closed("s1")
					case "other":
						version, _ := status.current()
						if _, err := status.write(context.Background(), "", "", version, clk.Now()); err != nil {
							t.Fatal(err)
						}
					}
					steps = steps[1:]
				}
				settle(r)
				informer()
				clk.Step(time.Second)
				settle(r)
				informer()
			}
			if diff := cmp.Diff(tt.want, status.written()); diff != "" {
				t.Errorf("writes of lastUsedAt, write time → value (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLastUseRetries: a write refused for a stale resourceVersion is tried
// again with the version the informer brings; one the server refuses as
// invalid (the session ended) is dropped; one that failed otherwise is
// tried again.
func TestLastUseRetries(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantKept  bool
		wantWrite bool
	}{
		{name: "conflict: written once the informer brings the version", wantKept: true, wantWrite: true},
		{name: "invalid: the session ended, dropped", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Session"}, "s", nil)},
		{name: "unavailable: kept for a retry", err: apierrors.NewServiceUnavailable("down"), wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := NewTracker(clk, Limits{})
			status := &fakeStatus{clock: clk, version: 7, err: tt.err}
			r.RecordLastUse(time.Minute, status.write)
			// The request read version 6; the status moved on since.
			r.uses.opened(Target{UID: "s1", Namespace: "sre", Name: "s", ResourceVersion: "6"})
			r.uses.closed("s1")
			settle(r)
			r.uses.observed("s1", "7", time.Time{})
			clk.Step(time.Second)
			settle(r)
			r.uses.mu.Lock()
			_, kept := r.uses.sessions["s1"]
			r.uses.mu.Unlock()
			if kept != tt.wantKept {
				t.Errorf("session kept: %v, want %v", kept, tt.wantKept)
			}
			if got := len(status.written()) > 0; got != tt.wantWrite {
				t.Errorf("written: %v (%v), want %v", got, status.written(), tt.wantWrite)
			}
		})
	}
}

// TestIdleDeadline: the tracker's timer ends a session's connections at
// its idle deadline, unless a recorded use moved it later; a request after
// it is refused.
func TestIdleDeadline(t *testing.T) {
	tests := []struct {
		name     string
		moveTo   time.Duration // 0: not moved
		wantEnd  time.Duration
		wantWhy  error
		expireAt time.Duration
	}{
		{name: "ends at the idle deadline", wantEnd: time.Minute, wantWhy: ErrIdle, expireAt: time.Hour},
		{name: "a recorded use moves it later", moveTo: 3 * time.Minute, wantEnd: 3 * time.Minute, wantWhy: ErrIdle, expireAt: time.Hour},
		{name: "expiry first", wantEnd: 30 * time.Second, wantWhy: ErrExpired, expireAt: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := NewTracker(clk, Limits{})
			ctx, release, err := r.OpenUntil(context.Background(), "s1", "alice", start.Add(tt.expireAt), start.Add(time.Minute))
			must(t, err)
			defer release()
			if tt.moveTo != 0 {
				r.Idle("s1", start.Add(tt.moveTo))
			}
			var ended time.Duration
			for s := time.Duration(0); s <= 5*time.Minute && ended == 0; s += time.Second {
				clk.Step(time.Second)
				for range 50 {
					if ctx.Err() != nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				if ctx.Err() != nil {
					ended = clk.Since(start)
				}
			}
			if ended != tt.wantEnd || !errors.Is(context.Cause(ctx), tt.wantWhy) {
				t.Errorf("ended at %s with %v, want %s with %v", ended, context.Cause(ctx), tt.wantEnd, tt.wantWhy)
			}
			_, _, err = r.OpenUntil(context.Background(), "s1", "alice", start.Add(time.Hour), start.Add(time.Minute))
			if !errors.Is(err, tt.wantWhy) {
				t.Errorf("open after the end: %v, want %v", err, tt.wantWhy)
			}
		})
	}
	// A stale read's earlier deadline does not cut a session whose use was
	// recorded since.
	clk := clocktesting.NewFakeClock(start.Add(2 * time.Minute))
	r := NewTracker(clk, Limits{})
	r.Idle("s1", start.Add(10*time.Minute))
	if _, release, err := r.OpenUntil(context.Background(), "s1", "alice", start.Add(time.Hour), start.Add(time.Minute)); err != nil {
		t.Errorf("open with a stale idle deadline: %v", err)
	} else {
		release()
	}
}
