// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// EndWithSessions ends the connections of a session as soon as the informer
// reports it deleted, being deleted, held by a SessionLock (EndWithLocks),
// or no longer Ready (Idle or Locked, when its Ready condition says so),
// resumes it when it is Ready again, and moves
// their end when its expiry or idle deadline moves later (an extension, a
// recorded use); forget is called with the UID of each session that is
// gone.
func (r *Tracker) EndWithSessions(sessions cache.SharedIndexInformer, forget func(types.UID)) error {
	_, err := sessions.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Connections may be open before the informer's first list.
		AddFunc: func(obj any) {
			s, ok := obj.(*v1alpha1.Session)
			if !ok {
				return
			}
			if s.DeletionTimestamp != nil {
				r.End(s.UID, ErrDeleted)
				return
			}
			r.observe(s)
			r.observeLocks(s)
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, okOld := oldObj.(*v1alpha1.Session)
			s, ok := newObj.(*v1alpha1.Session)
			if !ok || !okOld {
				return
			}
			if s.DeletionTimestamp != nil {
				// Checked first, as an extension would lift the tombstone
				// of an expiry.
				r.End(s.UID, ErrDeleted)
				return
			}
			r.observeLocks(s)
			wasReady := meta.IsStatusConditionTrue(old.Status.Conditions, v1alpha1.SessionConditionReady)
			ready := meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady)
			if s.Status.ExpiresAt != nil && (old.Status.ExpiresAt == nil || s.Status.ExpiresAt.After(old.Status.ExpiresAt.Time)) {
				r.Extend(s.UID, s.Status.ExpiresAt.Time)
			}
			r.observe(s)
			switch {
			case wasReady && !ready:
				why := ErrNotReady
				switch c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); {
				case c != nil && c.Reason == v1alpha1.SessionReasonIdle:
					why = ErrIdle
				case c != nil && c.Reason == v1alpha1.SessionReasonLocked:
					why = &LockedError{Message: c.Message}
				}
				r.End(s.UID, why)
			case !wasReady && ready:
				r.Resume(s.UID)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if s, ok := obj.(*v1alpha1.Session); ok {
				r.End(s.UID, ErrDeleted)
				r.Forget(s.UID)
				if r.uses != nil {
					r.uses.forget(s.UID)
				}
				forget(s.UID)
			}
		},
	})
	return err
}

// observe takes in a session's idle deadline and last use.
func (r *Tracker) observe(s *v1alpha1.Session) {
	if deadline, ok := v1alpha1.IdleDeadline(s); ok {
		r.Idle(s.UID, deadline)
	}
	if r.uses != nil {
		var lastUsedAt time.Time
		if s.Status.LastUsedAt != nil {
			lastUsedAt = s.Status.LastUsedAt.Time
		}
		r.uses.observed(s.UID, s.ResourceVersion, lastUsedAt)
	}
}
