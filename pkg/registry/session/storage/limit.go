// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// ownerLimit caps the live sessions of one owner across the server: those
// neither expired nor being deleted, in every namespace. Each replica counts
// them in the storage all replicas share, and lets the creates of one owner
// through one at a time, from the count to the write. Replicas do not
// coordinate: creates of one owner that race on N replicas at the same
// instant can end with up to max+N-1 live sessions.
type ownerLimit struct {
	max   int
	store *genericregistry.Store
	clock clock.PassiveClock

	mu      sync.Mutex
	mutexes map[string]*ownerMutex
}

// ownerMutex serializes the creates of one owner; it is dropped when nobody
// holds or waits for it.
type ownerMutex struct {
	sync.Mutex
	users int
}

// guard returns a create validation that refuses a session whose owner
// already has max live sessions and otherwise runs next, and the function
// to call once the create is over. The owner's mutex is taken at the first
// count and held until then; a create that storage retries counts again
// under the same mutex.
func (l *ownerLimit) guard(next rest.ValidateObjectFunc) (rest.ValidateObjectFunc, func()) {
	if l.max <= 0 {
		return next, func() {}
	}
	var unlock func()
	validate := func(ctx context.Context, obj runtime.Object) error {
		s, ok := obj.(*clustergate.Session)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected a Session, got %T", obj))
		}
		if unlock == nil {
			unlock = l.lock(s.Spec.Owner.Username)
		}
		n, err := l.live(ctx, s.Spec.Owner.Username)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("counting the sessions of %q: %w", s.Spec.Owner.Username, err))
		}
		if n >= l.max {
			return apierrors.NewForbidden(clustergate.Resource("sessions"), s.Name, fmt.Errorf(
				"user %q already has %d live sessions, the most one owner may have (--session-max-per-owner=%d): delete one or let one expire first",
				s.Spec.Owner.Username, n, l.max))
		}
		if next == nil {
			return nil
		}
		return next(ctx, obj)
	}
	return validate, func() {
		if unlock != nil {
			unlock()
		}
	}
}

// live counts the owner's sessions that are neither expired nor being
// deleted, with a consistent read of every namespace.
func (l *ownerLimit) live(ctx context.Context, owner string) (int, error) {
	list, err := l.store.List(genericapirequest.WithNamespace(ctx, metav1.NamespaceAll), &metainternalversion.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(v1alpha1.FieldOwnerUsername, owner),
	})
	if err != nil {
		return 0, err
	}
	now, n := l.clock.Now(), 0
	for _, s := range list.(*clustergate.SessionList).Items {
		if !v1alpha1.InternalSessionStateAt(&s, now).Ended() {
			n++
		}
	}
	return n, nil
}

// lock takes the mutex of an owner and returns its release.
func (l *ownerLimit) lock(owner string) func() {
	l.mu.Lock()
	om := l.mutexes[owner]
	if om == nil {
		om = &ownerMutex{}
		l.mutexes[owner] = om
	}
	om.users++
	l.mu.Unlock()
	om.Lock()
	return func() {
		om.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if om.users--; om.users == 0 {
			delete(l.mutexes, owner)
		}
	}
}
