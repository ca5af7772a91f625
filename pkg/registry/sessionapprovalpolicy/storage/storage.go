// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package storage holds the REST storage of SessionApprovalPolicies on etcd.
package storage

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
	"github.com/clustergate/clustergate/pkg/registry/quorum"
	"github.com/clustergate/clustergate/pkg/registry/sessionapprovalpolicy"
)

// TargetLabels reads the labels of a session's target, for the policies
// that select targets by label: a Shoot's in Gardener, a cluster target's
// Secret's. A target that does not exist has none.
type TargetLabels interface {
	TargetLabels(ctx context.Context, s *clustergate.Session) (map[string]string, error)
}

// NewREST returns the storage of SessionApprovalPolicies; targets reads the
// labels of sessions' targets (nil: a policy that selects by them governs
// no session, since no target's labels can be known).
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, targets TargetLabels) (*REST, error) {
	strategy := sessionapprovalpolicy.NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &clustergate.SessionApprovalPolicy{} },
		NewListFunc:               func() runtime.Object { return &clustergate.SessionApprovalPolicyList{} },
		PredicateFunc:             sessionapprovalpolicy.Match,
		DefaultQualifiedResource:  clustergate.Resource("sessionapprovalpolicies"),
		SingularQualifiedResource: clustergate.Resource("sessionapprovalpolicy"),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: sessionapprovalpolicy.NewTableConvertor(time.Now),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: sessionapprovalpolicy.GetAttrs}); err != nil {
		return nil, err
	}
	fromEtcd, err := quorum.NewLister(store, optsGetter)
	if err != nil {
		return nil, err
	}
	return &REST{Store: store, fromEtcd: fromEtcd, targets: targets}, nil
}

// REST serves the sessionapprovalpolicies resource.
type REST struct {
	*genericregistry.Store
	fromEtcd *quorum.Lister
	targets  TargetLabels
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets users type "kubectl get sap".
func (*REST) ShortNames() []string { return []string{"sap"} }

// Categories puts sessionapprovalpolicies into "kubectl get clustergate".
func (*REST) Categories() []string { return []string{"clustergate"} }

// Governing returns the policy that governs the new session s (the
// strictest that selects it), or nil. It reads every policy from etcd, not
// the watch cache, so that a policy created a moment ago governs the
// session created next on any replica. When a policy selects by the
// target's labels and they cannot be read, the answer is 503: the session
// waits for Gardener rather than go under a laxer policy.
func (r *REST) Governing(ctx context.Context, s *clustergate.Session) (*clustergate.SessionApprovalPolicy, error) {
	list, err := r.fromEtcd.List(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the session approval policies: %w", err))
	}
	p, err := approvalpolicy.Governing(list.(*clustergate.SessionApprovalPolicyList).Items, s, func() (map[string]string, error) {
		if r.targets == nil {
			return nil, nil
		}
		return r.targets.TargetLabels(ctx, s)
	})
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf(
			"the labels of the session's target, which a SessionApprovalPolicy selects by, cannot be read: %v", err))
	}
	return p, nil
}
