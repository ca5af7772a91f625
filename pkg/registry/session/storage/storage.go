// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package storage holds the REST storage of Sessions and their status on etcd.
package storage

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	sessioninformers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/registry/session"
	"github.com/clustergate/clustergate/pkg/registry/status"
)

// SessionStorage holds the storage of the sessions resource and its subresources.
type SessionStorage struct {
	// Session serves sessions.
	Session *REST
	// Status serves sessions/status.
	Status *status.StatusREST
	// Approval serves sessions/approval: approvers decide there.
	Approval *GrantREST
	// Extension serves sessions/extension: expiries move later there.
	Extension *GrantREST
	// Proxy serves sessions/proxy.
	Proxy *ProxyREST
	// Kubeconfig serves sessions/kubeconfig.
	Kubeconfig *KubeconfigREST
	// Recordings serves sessions/recordings.
	Recordings *RecordingsREST
	// Moderation serves sessions/moderation: moderators end streams there.
	Moderation *ModerationREST
}

// ProxyConfig configures the proxy and kubeconfig subresources.
type ProxyConfig struct {
	// Tracker tracks the open connections of this replica.
	Tracker *proxy.Tracker
	// Sessions is this replica's informer of Sessions, the one that ends
	// the tracker's connections, which sessions/proxy reads the session
	// of each request from; nil reads it from the storage.
	Sessions sessioninformers.SessionInformer
	// Backends finds how to reach a session's target; nil when the server
	// keeps no credentials (standalone).
	Backends Backends
	// Kubeconfig says what session kubeconfigs point at.
	Kubeconfig KubeconfigOptions
	// Recordings reads the sessions' recordings; nil when the server
	// records nothing.
	Recordings *recording.Reader
}

// Config configures the storage of Sessions.
type Config struct {
	// Limits bound the Sessions users may create.
	Limits validation.SessionLimits
	// MaxPerOwner caps the live sessions of one owner across the server;
	// 0 is no cap.
	MaxPerOwner int
	// Proxy configures the proxy and kubeconfig subresources.
	Proxy ProxyConfig
	// Finalize adds the session controller's finalizer at create; only for
	// a server that runs the controller.
	Finalize bool
	// Locks refuse creates and extensions of the sessions they hold.
	Locks Locks
	// Policies find the SessionApprovalPolicy that governs a new session;
	// nil is none, the flags alone.
	Policies Policies
	// Authorizer tells who holds the verb "moderate" on a session; nil
	// refuses every moderator.
	Authorizer authorizer.Authorizer
	// GardenerProject is the server's default Gardener project
	// (--gardener-project), given to Shoot targets named without one
	// outside a project's namespace.
	GardenerProject string
}

// Policies finds the SessionApprovalPolicy that governs a new session; the
// SessionApprovalPolicy storage is the real one. Its errors are API
// errors, returned to the client as they are.
type Policies interface {
	Governing(ctx context.Context, s *clustergate.Session) (*clustergate.SessionApprovalPolicy, error)
}

// NewStorage returns the storage of Sessions.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, cfg Config) (SessionStorage, error) {
	strategy := session.NewStrategy(scheme, cfg.Limits, cfg.Finalize, cfg.GardenerProject)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &clustergate.Session{} },
		NewListFunc:               func() runtime.Object { return &clustergate.SessionList{} },
		PredicateFunc:             session.Match,
		DefaultQualifiedResource:  clustergate.Resource("sessions"),
		SingularQualifiedResource: clustergate.Resource("session"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: session.NewTableConvertor(time.Now),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: session.GetAttrs}); err != nil {
		return SessionStorage{}, err
	}
	guard := lockGuard{locks: cfg.Locks, clock: clock.RealClock{}}
	limit := &ownerLimit{max: cfg.MaxPerOwner, store: store, clock: clock.RealClock{}, mutexes: map[string]*ownerMutex{}}
	mods := moderators{store: store, authorizer: cfg.Authorizer}
	return SessionStorage{
		Session: &REST{Store: store, strategy: strategy, limit: limit, guard: guard, policies: cfg.Policies},
		Status:  status.NewStatusREST(store, session.NewStatusStrategy(strategy)),
		Approval: &GrantREST{StatusREST: status.NewStatusREST(store, session.NewApprovalStrategy(strategy)), guard: guard,
			what: "approve the session's request", refuses: approves},
		Extension: &GrantREST{StatusREST: status.NewStatusREST(store, session.NewExtensionStrategy(strategy)), guard: guard,
			what: "extend the session", refuses: extends},
		Proxy:      newProxyREST(store, cfg.Proxy),
		Kubeconfig: &KubeconfigREST{store: store, config: cfg.Proxy.Kubeconfig},
		Recordings: &RecordingsREST{reader: cfg.Proxy.Recordings, moderators: mods},
		Moderation: &ModerationREST{reader: cfg.Proxy.Recordings, moderators: mods},
	}, nil
}

// REST serves the sessions resource.
type REST struct {
	*genericregistry.Store
	strategy session.Strategy
	limit    *ownerLimit
	guard    lockGuard
	policies Policies
}

// Create refuses a session a SessionLock holds, or past its owner's limit,
// and hands the SessionApprovalPolicy that governs it to the strategy.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	ctx, err := r.withApprovalPolicy(ctx, obj)
	if err != nil {
		return nil, err
	}
	validate, done := r.limit.guard(r.guard.create(createValidation))
	defer done()
	return r.Store.Create(ctx, obj, validate, options)
}

// withApprovalPolicy returns ctx with the policy that governs the new
// session obj, if any. The owner is stamped by then (admission mutates
// before the storage runs), and so is its Shoot's project, here; the
// namespace is the request's.
func (r *REST) withApprovalPolicy(ctx context.Context, obj runtime.Object) (context.Context, error) {
	s, ok := obj.(*clustergate.Session)
	if !ok {
		return ctx, nil
	}
	if s.Namespace == "" {
		s.Namespace = genericapirequest.NamespaceValue(ctx)
	}
	r.strategy.FillShootProject(s)
	if r.policies == nil {
		return ctx, nil
	}
	p, err := r.policies.Governing(ctx, s)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return ctx, nil
	}
	return session.WithApprovalPolicy(ctx, p), nil
}

// Update refuses a session that a server-side apply would create while a
// lock holds it or past its owner's limit, as Create does; an update of an
// existing one is not limited.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	validate, done := r.limit.guard(r.guard.create(createValidation))
	defer done()
	return r.Store.Update(ctx, name, objInfo, validate, updateValidation, forceAllowCreate, options)
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets users type "kubectl get sess".
func (*REST) ShortNames() []string { return []string{"sess"} }

// Categories puts sessions into "kubectl get clustergate".
func (*REST) Categories() []string { return []string{"clustergate"} }
