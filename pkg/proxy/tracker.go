// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package proxy streams a session owner's requests to the session's target
// and ends them when the session ends. Every server replica keeps its own
// Tracker of open connections with a timer at each session's expiry and
// idle deadline, so no connection outlives its session by waiting for a
// leader, and records when its sessions were last used (lastuse.go).
package proxy

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// Why connections of a session end.
var (
	ErrExpired  = errors.New("the session expired")
	ErrDeleted  = errors.New("the session was deleted")
	ErrNotReady = errors.New("the session is no longer ready")
	ErrIdle     = errors.New("the session went idle: unused for its idle timeout")
	// ErrStopping ends every connection of a replica that stops; their
	// clients reconnect and reach another replica.
	ErrStopping = errors.New("this clustergate replica is stopping: reconnect to reach another one")
	// ErrTooManyForSession and ErrTooManyForOwner refuse a connection past
	// the concurrency limits.
	ErrTooManyForSession = errors.New("too many concurrent requests through this session")
	ErrTooManyForOwner   = errors.New("too many concurrent requests through this user's sessions")
)

// tombstoneTTL is how long an ended session is remembered, so that a
// request racing its end is refused instead of starting a new entry.
const tombstoneTTL = 10 * time.Minute

// Limits cap concurrent connections; zero means no cap.
type Limits struct {
	PerSession int
	PerOwner   int
}

// DefaultLimits let a session hold 100 requests at once on a replica, and
// an owner 250 across their sessions: many watches, never a flood.
func DefaultLimits() Limits {
	return Limits{PerSession: 100, PerOwner: 250}
}

// Tracker tracks the open connections of every session on this replica.
type Tracker struct {
	clock  clock.WithDelayedExecution
	limits Limits

	mu       sync.Mutex
	sessions map[types.UID]*tracked
	owners   map[string]int
	nextID   uint64
	// extended holds the expiry of sessions extended while they had no
	// connection here, so that a connection opened from an older read of
	// the session still ends at the new expiry.
	extended map[types.UID]time.Time
	// idle holds the latest idle deadline the sessions informer reported
	// for each session with an idle timeout, for the same reason: an older
	// read holds an earlier one.
	idle map[types.UID]time.Time
	// uses records the sessions' last use in their status; nil records
	// nothing.
	uses *lastUse
	// locks are the SessionLocks, nil until EndWithLocks.
	locks *locks
	// recorder records streams and requests (record.go); nil records
	// nothing.
	recorder *recording.Recorder
	// access holds the deny rules (access.go); nil holds none. discovery
	// tells the namespaced resources of targets, for scopes and rules.
	access    *sessionaccess.Configuration
	discovery *discovery
	// moderation configures the streams of sessions whose access level
	// requires a moderator (moderation.go).
	moderation ModerationConfig
	// stopping is set by Stop: every connection is refused.
	stopping bool
}

type tracked struct {
	owner string
	// ref names the session in the tracker's log; empty when opened by
	// UID alone.
	ref   types.NamespacedName
	conns map[uint64]*openConn
	// expiresAt and idleAt (zero: none) are when the timer ends the
	// session, whichever comes first.
	expiresAt, idleAt time.Time
	// timer ends the session at its expiry or idle deadline, or forgets it
	// once ended.
	timer clock.Timer
	ended error
}

// openConn is one open connection of a session.
type openConn struct {
	cancel context.CancelCauseFunc
	// subject is what SessionLocks match the connection's request on, with
	// its requester (Target.Subject); nil leaves it to the session's match.
	subject *v1alpha1.LockSubject
}

// NewTracker returns an empty tracker.
func NewTracker(clk clock.WithDelayedExecution, limits Limits) *Tracker {
	return &Tracker{clock: clk, limits: limits, sessions: map[types.UID]*tracked{}, owners: map[string]int{},
		extended: map[types.UID]time.Time{}, idle: map[types.UID]time.Time{}, discovery: newDiscovery(clk),
		moderation: ModerationConfig{Wait: DefaultModeratorWait}}
}

// Open registers a connection of a session. The returned context is
// canceled, with the reason as its cause, when the session expires or is
// ended; release must be called when the connection is over.
func (r *Tracker) Open(parent context.Context, uid types.UID, owner string, expiresAt time.Time) (context.Context, func(), error) {
	return r.OpenUntil(parent, uid, owner, expiresAt, time.Time{})
}

// OpenUntil is Open for a session that also ends at idleAt, its idle
// deadline as read with the session (zero: none); a later one the sessions
// informer reported since counts instead.
func (r *Tracker) OpenUntil(parent context.Context, uid types.UID, owner string, expiresAt, idleAt time.Time) (context.Context, func(), error) {
	return r.openConn(parent, uid, types.NamespacedName{}, owner, expiresAt, idleAt, nil)
}

// openConn is OpenUntil of a connection of the session ref that
// SessionLocks also match on subject, when it is not nil.
func (r *Tracker) openConn(parent context.Context, uid types.UID, ref types.NamespacedName, owner string, expiresAt, idleAt time.Time,
	subject *v1alpha1.LockSubject) (context.Context, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return nil, nil, ErrStopping
	}
	t := r.sessions[uid]
	if t != nil && t.ended != nil {
		return nil, nil, t.ended
	}
	if later, ok := r.extended[uid]; ok && later.After(expiresAt) {
		expiresAt = later
	}
	if later, ok := r.idle[uid]; ok && later.After(idleAt) {
		idleAt = later
	}
	now := r.clock.Now()
	if !now.Before(expiresAt) {
		return nil, nil, ErrExpired
	}
	if !idleAt.IsZero() && !now.Before(idleAt) {
		return nil, nil, ErrIdle
	}
	if t != nil && r.limits.PerSession > 0 && len(t.conns) >= r.limits.PerSession {
		return nil, nil, ErrTooManyForSession
	}
	if r.limits.PerOwner > 0 && r.owners[owner] >= r.limits.PerOwner {
		return nil, nil, ErrTooManyForOwner
	}
	if t == nil {
		t = &tracked{owner: owner, ref: ref, conns: map[uint64]*openConn{}, idleAt: idleAt}
		r.expireAt(uid, t, expiresAt)
		r.sessions[uid] = t
	}
	ctx, cancel := context.WithCancelCause(parent)
	r.nextID++
	id := r.nextID
	t.conns[id] = &openConn{cancel: cancel, subject: subject}
	r.owners[owner]++
	release := sync.OnceFunc(func() {
		cancel(nil)
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(t.conns, id)
		if r.owners[owner]--; r.owners[owner] <= 0 {
			delete(r.owners, owner)
		}
		if len(t.conns) == 0 && t.ended == nil {
			t.timer.Stop()
			delete(r.sessions, uid)
		}
	})
	return ctx, release, nil
}

// expireAt sets the timer of t to end its session at expiresAt or at its
// idle deadline, whichever comes first.
func (r *Tracker) expireAt(uid types.UID, t *tracked, expiresAt time.Time) {
	t.expiresAt = expiresAt
	at, reason := expiresAt, ErrExpired
	if !t.idleAt.IsZero() && t.idleAt.Before(at) {
		at, reason = t.idleAt, ErrIdle
	}
	idleAt := t.idleAt
	// The callback may run inside a fake clock's Step, which holds the
	// clock: end the session from its own goroutine.
	t.timer = r.clock.AfterFunc(at.Sub(r.clock.Now()), func() { go r.expire(uid, t, expiresAt, idleAt, reason) })
}

// expire ends the session of t when its timer fired, unless an extension
// or a recorded use moved its end since: one that came between the timer
// and this call would otherwise be lost to the tombstone.
func (r *Tracker) expire(uid types.UID, t *tracked, expiresAt, idleAt time.Time, reason error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[uid] == t && t.expiresAt.Equal(expiresAt) && t.idleAt.Equal(idleAt) {
		r.end(uid, reason)
	}
}

// Idle moves the idle deadline of a session's connections later, to
// idleAt, as a use recorded in its status does; an earlier one changes
// nothing. A deadline that reaches this replica just after its timer ended
// the session, from a use recorded in time, lifts the tombstone.
func (r *Tracker) Idle(uid types.UID, idleAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if later, ok := r.idle[uid]; !ok || idleAt.After(later) {
		r.idle[uid] = idleAt
	}
	t := r.sessions[uid]
	if t != nil && errors.Is(t.ended, ErrIdle) && idleAt.After(t.idleAt) && r.clock.Now().Before(idleAt) {
		r.lift(uid, t)
		return
	}
	if t != nil && t.ended == nil && idleAt.After(t.idleAt) {
		t.timer.Stop()
		t.idleAt = idleAt
		r.expireAt(uid, t, t.expiresAt)
	}
}

// Extend moves the end of a session's connections later, to expiresAt; an
// earlier expiresAt changes nothing. Open connections keep running. It
// lifts the tombstone of an expiry, so callers pass only extensions of a
// session that is not being deleted.
func (r *Tracker) Extend(uid types.UID, expiresAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.sessions[uid]
	if t != nil && errors.Is(t.ended, ErrExpired) && expiresAt.After(t.expiresAt) {
		// The extension was written before the session expired but reached
		// this replica after its timer ended it: the session is valid
		// again, and the tombstone would refuse it for tombstoneTTL.
		r.lift(uid, t)
		t = nil
	}
	switch {
	case t == nil:
		if later, ok := r.extended[uid]; !ok || expiresAt.After(later) {
			r.extended[uid] = expiresAt
		}
	case t.ended == nil && expiresAt.After(t.expiresAt):
		t.timer.Stop()
		r.expireAt(uid, t, expiresAt)
	}
}

// Forget drops what the tracker remembers of a deleted session beyond
// its tombstone.
func (r *Tracker) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.extended, uid)
	delete(r.idle, uid)
}

// End ends every connection of a session with the given reason and refuses
// new ones for a while (ErrNotReady until Resume).
func (r *Tracker) End(uid types.UID, reason error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.end(uid, reason)
}

// end is End with r.mu held.
func (r *Tracker) end(uid types.UID, reason error) {
	t := r.sessions[uid]
	if t == nil {
		t = &tracked{conns: map[uint64]*openConn{}}
		r.sessions[uid] = t
	}
	if t.ended != nil {
		return
	}
	delete(r.extended, uid)
	t.ended = reason
	if t.timer != nil {
		t.timer.Stop()
	}
	// Forget the tombstone later; from its own goroutine, as the callback
	// may run inside a fake clock's Step.
	t.timer = r.clock.AfterFunc(tombstoneTTL, func() { go r.forget(uid, t) })
	t.cut(uid, reason)
}

// sessionCut is the cause of a connection's end that its session's end or
// the replica's stop gave. The tracker logs one line for all the
// connections of a session it cuts, where each connection would log its
// own: at an expiry of many streams, those lines cost the replica about a
// quarter of the cut's processor time.
type sessionCut struct{ error }

func (c sessionCut) Unwrap() error { return c.error }

// cutBySession tells whether the session's end or the replica's stop ended
// ctx, with a line of the tracker's for the session.
func cutBySession(ctx context.Context) bool {
	var cut sessionCut
	return errors.As(context.Cause(ctx), &cut)
}

// cut ends every open connection of t, a session's, with reason, logging
// it once.
func (t *tracked) cut(uid types.UID, reason error) {
	if len(t.conns) == 0 {
		return
	}
	klog.InfoS("Session's proxied requests ended", "session", klog.KRef(t.ref.Namespace, t.ref.Name), "uid", uid, "owner", t.owner,
		"requests", len(t.conns), "closeReason", reason.Error())
	for _, c := range t.conns {
		c.cancel(sessionCut{reason})
	}
}

// Stop ends every open connection with ErrStopping and refuses new ones
// with it, for a replica that stops: its HTTP server's shutdown would
// otherwise wait for streams (watches, exec) until its timeout.
func (r *Tracker) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	for uid, t := range r.sessions {
		if t.ended == nil {
			t.cut(uid, ErrStopping)
		}
	}
}

// Resume accepts connections of a session again that End refused because
// it was no longer ready (or locked), once it is ready again.
func (r *Tracker) Resume(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.sessions[uid]; t != nil && (errors.Is(t.ended, ErrNotReady) || errors.Is(t.ended, ErrLocked)) {
		r.lift(uid, t)
	}
}

// lift drops the tombstone t of a session, so that it accepts connections
// again. Connections it ended still hold t and let go of it alone.
func (r *Tracker) lift(uid types.UID, t *tracked) {
	t.timer.Stop()
	delete(r.sessions, uid)
}

// forget drops the tombstone t of a session, unless a newer entry took its
// place.
func (r *Tracker) forget(uid types.UID, t *tracked) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[uid] == t {
		delete(r.sessions, uid)
	}
}

// OpenConnections returns the number of open connections of a session.
func (r *Tracker) OpenConnections(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.sessions[uid]; t != nil {
		return len(t.conns)
	}
	return 0
}
