// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllerutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Failure is a failed call to an outside service (Gardener, a target), kept
// as observed state: the pass that failed writes nothing more, and the next
// pass sees the failure and decides, like any other observation, what to
// report and when to try again.
type Failure struct {
	// Reason and Message say what failed, for a condition.
	Reason, Message string
	// At is when it failed last; Count how often it failed in a row.
	At    time.Time
	Count int
}

// RetryAt is when to try again: base after the first failure, doubling with
// every further one up to limit.
func (f Failure) RetryAt(base, limit time.Duration) time.Time {
	d := base
	for i := 1; i < f.Count && d < limit; i++ {
		d *= 2
	}
	return f.At.Add(min(d, limit))
}

// Failures remembers the last failure of each object until it succeeds or
// is forgotten. Safe for concurrent use.
type Failures struct {
	mu sync.Mutex
	m  map[types.UID]Failure
}

// NewFailures returns an empty memory.
func NewFailures() *Failures { return &Failures{m: map[types.UID]Failure{}} }

// Record notes a failure of uid at now.
func (f *Failures) Record(uid types.UID, reason, message string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[uid] = Failure{Reason: reason, Message: message, At: now, Count: f.m[uid].Count + 1}
}

// Get returns the last failure of uid, if it has one.
func (f *Failures) Get(uid types.UID) (Failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	failure, ok := f.m[uid]
	return failure, ok
}

// Forget drops uid's failures: it succeeded or is gone.
func (f *Failures) Forget(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, uid)
}
