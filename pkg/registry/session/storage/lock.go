// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/registry/status"
)

// Locks finds the SessionLock that holds a session; the SessionLock
// storage is the real one.
type Locks interface {
	Holding(ctx context.Context, subject v1alpha1.LockSubject, now time.Time) (*clustergate.SessionLock, error)
}

// lockGuard refuses to create or extend a session a SessionLock holds.
type lockGuard struct {
	locks Locks
	clock clock.PassiveClock
}

// check returns a Forbidden error naming the lock and its reason when one
// holds s, to do what.
func (g lockGuard) check(ctx context.Context, s *clustergate.Session, what string) error {
	if g.locks == nil {
		return nil
	}
	l, err := g.locks.Holding(ctx, v1alpha1.InternalLockSubjectOf(s), g.clock.Now())
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading the session locks: %w", err))
	}
	if l == nil {
		return nil
	}
	return Locked(s.Name, what, l.Name, l.Spec.Reason)
}

// Locked is the Forbidden error of a session the lock name holds: kubectl
// prints `sessions.clustergate.dev "NAME" is forbidden: cannot WHAT: locked
// by SessionLock LOCK: REASON`.
func Locked(session, what, lock, reason string) *apierrors.StatusError {
	return apierrors.NewForbidden(clustergate.Resource("sessions"), session,
		errors.New("cannot "+what+": "+v1alpha1.LockMessage(lock, reason)))
}

// create wraps a create validation: the lock is checked on the session as
// it will be stored, with its owner stamped and its namespace set.
func (g lockGuard) create(next rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		if s, ok := obj.(*clustergate.Session); ok {
			if err := g.check(ctx, s, "open a session"); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		return next(ctx, obj)
	}
}

// GrantREST serves a subresource that grants a session more access, which
// a SessionLock that holds the session refuses: the extension, and the
// approval when it approves.
type GrantREST struct {
	*status.StatusREST
	guard lockGuard
	// what is what the refusal says cannot be done.
	what string
	// refuses says whether an update of old to obj is one a lock refuses.
	refuses func(obj, old *clustergate.Session) bool
}

// Update changes the session unless a lock holds it and refuses the change.
func (r *GrantREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	validate := func(ctx context.Context, obj, old runtime.Object) error {
		s, ok := obj.(*clustergate.Session)
		o, okOld := old.(*clustergate.Session)
		if ok && okOld && r.refuses(s, o) {
			if err := r.guard.check(ctx, s, r.what); err != nil {
				return err
			}
		}
		if updateValidation == nil {
			return nil
		}
		return updateValidation(ctx, obj, old)
	}
	return r.StatusREST.Update(ctx, name, objInfo, createValidation, validate, forceAllowCreate, options)
}

// extends is true: every update through sessions/extension asks for more
// time, directly or through an approver.
func extends(_, _ *clustergate.Session) bool { return true }

// approves says whether an update through sessions/approval approves the
// pending request; a denial is never refused.
func approves(obj, old *clustergate.Session) bool {
	pending := old.Status.PendingApproval()
	n := len(obj.Status.Approvals)
	return pending != nil && n == len(old.Status.Approvals) && obj.Status.Approvals[n-1].Decision == clustergate.ApprovalApproved
}
