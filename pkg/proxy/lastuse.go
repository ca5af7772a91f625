// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// LastUseWriter writes at as a session's status.lastUsedAt, on the
// condition that the session's resourceVersion is still resourceVersion,
// and returns the new one. The condition makes replicas that write at the
// same moment take turns: one wins, the others see its write and wait.
type LastUseWriter func(ctx context.Context, namespace, name, resourceVersion string, at time.Time) (string, error)

// LastUseFieldManager is the field manager of the replicas' writes of
// status.lastUsedAt.
const LastUseFieldManager = "clustergate-proxy"

// lastUseWriteTimeout bounds one write of a last use.
const lastUseWriteTimeout = 10 * time.Second

// lastUseRetry is when a write that failed for a conflict or a passing
// error is tried again, unless the session's next change comes first.
const lastUseRetry = time.Second

// lastUse records when this replica's sessions were last used, in their
// status.lastUsedAt, coalesced: a write goes out only when the use moved
// past what the status holds, and only once an interval passed since the
// last write of any replica this one knows of (its own, or one it saw come
// in). An open request counts as a use at every moment, so a long stream
// moves lastUsedAt once an interval.
type lastUse struct {
	clock    clock.WithDelayedExecution
	interval time.Duration
	write    LastUseWriter

	mu       sync.Mutex
	sessions map[types.UID]*usage
}

// usage is what this replica knows of one session's use.
type usage struct {
	namespace, name string
	// open counts the session's requests open here; lastEnd is when the
	// last one ended.
	open    int
	lastEnd time.Time
	// recorded and resourceVersion are the session's lastUsedAt and
	// resourceVersion as last seen.
	recorded        time.Time
	resourceVersion string
	// turn is the earliest moment of the next write: an interval after
	// the last write this replica made or saw.
	turn time.Time
	// timer, armed for timerAt, looks at the session again.
	timer   clock.Timer
	timerAt time.Time
	writing bool
}

// RecordLastUse makes the tracker record its sessions' last use with
// write, at most once an interval per session across the replicas that
// record it so. It is called before the tracker serves.
func (r *Tracker) RecordLastUse(interval time.Duration, write LastUseWriter) {
	r.uses = &lastUse{clock: r.clock, interval: interval, write: write, sessions: map[types.UID]*usage{}}
}

// opened counts a request of t's session that the tracker admitted.
func (l *lastUse) opened(t Target) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.sessions[t.UID]
	if u == nil {
		// What the request read of the session. A recorded use says some
		// replica wrote, but not exactly when: lastUsedAt is the use,
		// truncated to the second, and a replica writes a use within
		// about an interval of it. So the turn is an interval after
		// lastUsedAt + an interval + a second; the resourceVersion
		// precondition settles the rare write that comes sooner.
		u = &usage{namespace: t.Namespace, name: t.Name, recorded: t.LastUsedAt, resourceVersion: t.ResourceVersion}
		if !t.LastUsedAt.IsZero() {
			u.turn = t.LastUsedAt.Add(2*l.interval + time.Second)
		}
		l.sessions[t.UID] = u
	}
	u.open++
	l.schedule(t.UID, u)
}

// closed counts the end of a request of a session.
func (l *lastUse) closed(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.sessions[uid]
	if u == nil {
		return
	}
	u.open--
	u.lastEnd = l.clock.Now()
	l.schedule(uid, u)
}

// observed takes in a session's lastUsedAt and resourceVersion as the
// sessions informer reports them; only for sessions used here.
func (l *lastUse) observed(uid types.UID, resourceVersion string, lastUsedAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.sessions[uid]
	if u == nil {
		return
	}
	u.resourceVersion = resourceVersion
	if lastUsedAt.After(u.recorded) {
		// Another replica (or this one) wrote: the next write waits an
		// interval from when this replica learnt of it.
		u.recorded = lastUsedAt
		u.turn = later(u.turn, l.clock.Now().Add(l.interval))
	}
	l.schedule(uid, u)
}

// forget drops a deleted session.
func (l *lastUse) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.sessions[uid]; u != nil {
		stopTimer(u)
		delete(l.sessions, uid)
	}
}

// lastUseOf is the session's latest use seen here, at the second precision
// of lastUsedAt: now while a request is open.
func (l *lastUse) lastUseOf(u *usage, now time.Time) time.Time {
	if u.open > 0 {
		return now.Truncate(time.Second)
	}
	return u.lastEnd.Truncate(time.Second)
}

// schedule writes the session's last use now if it is due and its turn has
// come, arms a timer for its turn if it is due or a request is open, and
// otherwise keeps the session until its turn, then forgets it. l.mu is
// held. It runs at every request's start and end, so a timer already armed
// early enough is kept rather than made anew.
func (l *lastUse) schedule(uid types.UID, u *usage) {
	if u.writing {
		return // its end schedules again
	}
	now := l.clock.Now()
	due := l.lastUseOf(u, now).After(u.recorded)
	switch {
	case due && !now.Before(u.turn):
		stopTimer(u)
		u.writing = true
		go l.writeLastUse(uid, u, l.lastUseOf(u, now), u.resourceVersion)
	case !due && u.open == 0 && !now.Before(u.turn):
		// Nothing to write, and the turn it keeps is over: a request
		// that comes later starts from what it reads of the session.
		stopTimer(u)
		delete(l.sessions, uid)
	default:
		// Wait for the turn; an open request that was just written
		// becomes due again with the next second. A timer that fires
		// sooner only schedules again.
		at := now.Add(max(u.turn.Sub(now), time.Second))
		if u.timer != nil && !u.timerAt.After(at) {
			return
		}
		stopTimer(u)
		u.timer, u.timerAt = l.clock.AfterFunc(at.Sub(now), func() { go l.fire(uid, u) }), at
	}
}

// stopTimer stops the session's timer, if one is armed.
func stopTimer(u *usage) {
	if u.timer != nil {
		u.timer.Stop()
		u.timer = nil
	}
}

// fire looks at a session again when its timer fired.
func (l *lastUse) fire(uid types.UID, u *usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions[uid] == u {
		u.timer = nil
		l.schedule(uid, u)
	}
}

// writeLastUse writes at as the session's lastUsedAt and schedules what
// comes next: after a write the next turn is an interval away; after a
// failure, a second, or the session's next change as the informer reports
// it, whichever comes first.
func (l *lastUse) writeLastUse(uid types.UID, u *usage, at time.Time, resourceVersion string) {
	ctx, cancel := context.WithTimeout(context.Background(), lastUseWriteTimeout)
	defer cancel()
	newVersion, err := l.write(ctx, u.namespace, u.name, resourceVersion, at)
	l.mu.Lock()
	defer l.mu.Unlock()
	u.writing = false
	now := l.clock.Now()
	switch {
	case err == nil:
		if at.After(u.recorded) {
			u.recorded, u.resourceVersion = at, newVersion
		}
		u.turn = now.Add(l.interval)
	case apierrors.IsNotFound(err):
		delete(l.sessions, uid)
		return
	case apierrors.IsInvalid(err):
		// The session ended (expired, idle): its use is no longer
		// recorded. A request still open is cut soon; until then, no
		// sooner than an interval.
		klog.V(2).InfoS("Last use not recorded", "session", klog.KRef(u.namespace, u.name), "err", err)
		if u.open == 0 {
			delete(l.sessions, uid)
			return
		}
		u.turn = now.Add(l.interval)
	default:
		if !apierrors.IsConflict(err) {
			klog.ErrorS(err, "Recording the last use", "session", klog.KRef(u.namespace, u.name))
		}
		u.turn = later(u.turn, now.Add(lastUseRetry))
	}
	if l.sessions[uid] == u {
		l.schedule(uid, u)
	}
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
