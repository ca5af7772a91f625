// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// ErrLocked is what every LockedError is: a SessionLock holds the session.
var ErrLocked = errors.New("the session is locked")

// LockedError ends and refuses the connections of a session a SessionLock
// holds; it says which lock and why.
type LockedError struct {
	// Message names the lock and its reason (v1alpha1.LockMessage).
	Message string
}

func (e *LockedError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// locks is what a tracker knows of the SessionLocks: the informers' stores
// of locks and sessions, and the timer that looks again when a lock
// expires.
type locks struct {
	locks, sessions cache.Store
	// mu serializes the passes over the sessions: informer events and the
	// expiry timer.
	mu    sync.Mutex
	timer clock.Timer
}

// list returns the locks in the store.
func (l *locks) list() []*v1alpha1.SessionLock {
	var out []*v1alpha1.SessionLock
	for _, obj := range l.locks.List() {
		if lock, ok := obj.(*v1alpha1.SessionLock); ok {
			out = append(out, lock)
		}
	}
	return out
}

// EndWithLocks ends the connections of every session a SessionLock holds
// as soon as the locks informer reports the lock, refuses new ones while it
// holds, and accepts them again once no lock does (deleted, changed or
// expired). sessions is the store of the sessions informer that
// EndWithSessions watches: the sessions to match.
func (r *Tracker) EndWithLocks(lockInformer cache.SharedIndexInformer, sessions cache.Store) error {
	r.mu.Lock()
	r.locks = &locks{locks: lockInformer.GetStore(), sessions: sessions}
	r.mu.Unlock()
	relock := func() { r.relock() }
	_, err := lockInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { relock() },
		UpdateFunc: func(any, any) { relock() },
		DeleteFunc: func(any) { relock() },
	})
	return err
}

// relock matches every session against the locks, ends those a lock holds
// and lifts the lock of the others, cuts the open requests whose requester
// a lock holds, and arms the timer at the next expiry of a lock.
func (r *Tracker) relock() {
	l := r.lockState()
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now, all := r.clock.Now(), l.list()
	for _, obj := range l.sessions.List() {
		if s, ok := obj.(*v1alpha1.Session); ok {
			r.applyLocks(s, all, now)
		}
	}
	r.cutRequests(all, now)
	if l.timer != nil {
		l.timer.Stop()
	}
	if next := v1alpha1.NextLockExpiry(all, now); !next.IsZero() {
		// From its own goroutine, as the callback may run inside a fake
		// clock's Step.
		l.timer = r.clock.AfterFunc(next.Sub(now), func() { go r.relock() })
	}
}

// lockState returns the tracker's locks, nil before EndWithLocks.
func (r *Tracker) lockState() *locks {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.locks
}

// applyLocks ends the connections of s when a lock holds it, and lifts the
// lock of s when none does.
func (r *Tracker) applyLocks(s *v1alpha1.Session, all []*v1alpha1.SessionLock, now time.Time) {
	if s.DeletionTimestamp != nil {
		return
	}
	if l := v1alpha1.MatchingLock(all, v1alpha1.LockSubjectOf(s), now); l != nil {
		r.End(s.UID, &LockedError{Message: v1alpha1.LockMessage(l.Name, l.Spec.Reason)})
		return
	}
	r.unlock(s.UID)
}

// cutRequests ends the open connections whose request a lock holds, by
// its requester's user name or current groups, in sessions that no lock
// holds as a whole; the session and its other requests go on.
func (r *Tracker) cutRequests(all []*v1alpha1.SessionLock, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.sessions {
		if t.ended != nil {
			continue
		}
		for _, c := range t.conns {
			if c.subject == nil {
				continue
			}
			if l := v1alpha1.MatchingLock(all, *c.subject, now); l != nil {
				c.cancel(&LockedError{Message: v1alpha1.LockMessage(l.Name, l.Spec.Reason)})
			}
		}
	}
}

// openRequest registers the connection of a request through t and refuses
// it while a lock holds t.Subject, its requester included. It looks after
// registering: a lock the informer delivers meanwhile is either seen here
// or cuts the registered connection (cutRequests), so none slips between.
func (r *Tracker) openRequest(parent context.Context, t Target) (context.Context, func(), error) {
	ctx, release, err := r.openConn(parent, t.UID, types.NamespacedName{Namespace: t.Namespace, Name: t.Name}, t.Owner, t.ExpiresAt, t.IdleAt, t.Subject)
	if err != nil || t.Subject == nil {
		return ctx, release, err
	}
	if msg, held := r.Holding(*t.Subject); held {
		release()
		return nil, nil, &LockedError{Message: msg}
	}
	return ctx, release, nil
}

// observeLocks matches one session, new or changed, against the locks.
func (r *Tracker) observeLocks(s *v1alpha1.Session) {
	if l := r.lockState(); l != nil {
		r.applyLocks(s, l.list(), r.clock.Now())
	}
}

// unlock accepts connections of a session again that a lock ended.
func (r *Tracker) unlock(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.sessions[uid]; t != nil && errors.Is(t.ended, ErrLocked) {
		r.lift(uid, t)
	}
}

// Holding returns the message of the lock that holds a session with
// subject now, as this replica's locks informer knows them: sessions/proxy
// refuses it at once, before the leader marks the session Locked. ok is
// false when none holds it, or before EndWithLocks.
func (r *Tracker) Holding(subject v1alpha1.LockSubject) (message string, ok bool) {
	l := r.lockState()
	if l == nil {
		return "", false
	}
	lock := v1alpha1.MatchingLock(l.list(), subject, r.clock.Now())
	if lock == nil {
		return "", false
	}
	return v1alpha1.LockMessage(lock.Name, lock.Spec.Reason), true
}
