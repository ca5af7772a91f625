// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"fmt"
	"slices"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	informers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// FieldManager is the field manager of the controller's writes.
const FieldManager = "clustergate-session-controller"

// Options configure a Controller.
type Options struct {
	Config
	// Namespace is the server's own namespace: credentials Secrets and the
	// kubeconfig Secrets of cluster targets live there.
	Namespace string
	// IstioPolicy configures the sessions' Istio AuthorizationPolicies.
	IstioPolicy IstioPolicyConfig
	// Workers is the number of sessions handled in parallel.
	Workers int
	// Access holds the access levels: the groups certificates carry and
	// the ClusterRoles scoped sessions are bound to. Nil is
	// sessionaccess.Default().
	Access *sessionaccess.Configuration
	// OrphanSweepInterval is how often the leader looks for RoleBindings
	// of sessions that no longer exist on the targets it knows; 0 is
	// DefaultOrphanSweepInterval.
	OrphanSweepInterval time.Duration
	// Events stores the lifecycle events of the sessions it is shown in
	// the outbox; nil without event sinks.
	Events Events
}

// Events stores the events of the steps a session shows that are not
// stored yet.
type Events interface {
	Record(ctx context.Context, s *v1alpha1.Session) error
}

// DefaultOrphanSweepInterval and DefaultBindingCleanupTimeout apply when
// Options leave them 0.
const (
	DefaultOrphanSweepInterval   = 5 * time.Minute
	DefaultBindingCleanupTimeout = 10 * time.Minute
)

// Controller runs the lifecycle of Sessions.
type Controller struct {
	opts     Options
	client   versioned.Interface
	kube     kubernetes.Interface
	istio    istioclient.Interface
	gardener gardener.Requester
	clock    clock.WithTicker
	recorder events.EventRecorder

	sessions listers.SessionLister
	locks    listers.SessionLockLister
	secrets  corelisters.SecretLister
	// targets are the Secrets marked as cluster targets.
	targets   corelisters.SecretLister
	hasSynced []cache.InformerSynced
	queue     *controllerutil.Queue
	// shoots reach Shoots with admin kubeconfigs from Gardener; nil
	// without a Gardener project.
	shoots *shootAccess
	// gardenerFailures are the failed attempts to reach a session's Shoot
	// through Gardener.
	gardenerFailures *controllerutil.Failures
	// bindingFailures are the failed attempts to apply a scoped session's
	// RoleBinding on its target.
	bindingFailures *controllerutil.Failures
	// removeHandlers removes the controller's event handlers from the
	// shared informers.
	removeHandlers func()
	// policies caches the sessions' AuthorizationPolicies; nil when the
	// server manages none.
	policies *policyCache
}

// New returns a controller over the given informers. The Secret informers
// must cover only the server's namespace: secrets restricted with
// credentials.Selector, targets with TargetSelector. g may be nil when no
// Gardener project is configured.
func New(opts Options, client versioned.Interface, kube kubernetes.Interface, istio istioclient.Interface, g gardener.Requester,
	sessions informers.SessionInformer, locks informers.SessionLockInformer, secrets, targets coreinformers.SecretInformer, recorder events.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	if opts.Access == nil {
		opts.Access = sessionaccess.Default()
	}
	if opts.OrphanSweepInterval == 0 {
		opts.OrphanSweepInterval = DefaultOrphanSweepInterval
	}
	if opts.BindingCleanupTimeout == 0 {
		opts.BindingCleanupTimeout = DefaultBindingCleanupTimeout
	}
	c := &Controller{
		opts: opts, client: client, kube: kube, istio: istio, gardener: g, clock: clk, recorder: recorder,
		sessions: sessions.Lister(),
		locks:    locks.Lister(),
		secrets:  secrets.Lister(),
		targets:  targets.Lister(),
		hasSynced: []cache.InformerSynced{sessions.Informer().HasSynced, locks.Informer().HasSynced,
			secrets.Informer().HasSynced, targets.Informer().HasSynced},
		gardenerFailures: controllerutil.NewFailures(),
		bindingFailures:  controllerutil.NewFailures(),
	}
	if g != nil {
		c.shoots = newShootAccess(g)
	}
	c.queue = controllerutil.NewQueue("session-controller", clk, 500*time.Millisecond, time.Minute, c.sync)
	remove, err := controllerutil.AddHandlers(
		controllerutil.InformerHandler{Informer: sessions.Informer(), Handler: c.queue.EventHandler(controllerutil.ObjectKey)},
		controllerutil.InformerHandler{Informer: secrets.Informer(), Handler: c.queue.EventHandler(func(obj any) (types.NamespacedName, bool) {
			s, ok := obj.(*corev1.Secret)
			if !ok {
				return types.NamespacedName{}, false
			}
			return types.NamespacedName{Namespace: s.Labels[credentials.LabelSessionNamespace], Name: s.Labels[credentials.LabelSessionName]}, true
		})},
		// A target that appears, changes or goes queues the sessions that
		// name it: they wait for it without a timer.
		controllerutil.InformerHandler{Informer: targets.Informer(), Handler: c.queue.KeysEventHandler(c.sessionsNaming)},
		// A lock that appears, changes or goes queues every session, to be
		// marked Locked or no longer; an expiry is a timer (RequeueAfter).
		controllerutil.InformerHandler{Informer: locks.Informer(), Handler: c.queue.KeysEventHandler(c.allSessions)})
	if err != nil {
		return nil, err
	}
	c.removeHandlers = remove
	if opts.IstioPolicy.Namespace != "" && istio != nil {
		// A policy's changes queue its session, so that a pass after an
		// apply or delete sees the result, and a policy deleted by hand is
		// put back at once.
		c.policies = newPolicyCache(istio, kube.Discovery(), opts.IstioPolicy.Namespace, c.queue.EventHandler(func(obj any) (types.NamespacedName, bool) {
			p, ok := obj.(metav1.Object)
			if !ok {
				return types.NamespacedName{}, false
			}
			return credentials.SessionOf(p)
		}))
	}
	return c, nil
}

// Run handles sessions until ctx ends, then lets go of the informers.
func (c *Controller) Run(ctx context.Context) {
	defer c.removeHandlers()
	hasSynced := c.hasSynced
	if c.policies != nil {
		c.policies.check(ctx)
		go c.policies.run(ctx)
		hasSynced = append(slices.Clone(hasSynced), c.policies.hasSynced)
	}
	go c.sweepOrphansEvery(ctx, c.hasSynced)
	c.queue.Run(ctx, c.opts.Workers, hasSynced...)
}

// sync observes one session and performs its next action. Expiry is a
// timer on the queue (RequeueAfter), not a resync; writes that come back as
// no event (on targets) are followed by another pass at once.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) (controllerutil.Result, error) {
	s, err := c.sessions.Sessions(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controllerutil.Result{}, nil
	}
	if err != nil {
		return controllerutil.Result{}, err
	}
	o, target, err := c.observe(ctx, s)
	if err != nil {
		return controllerutil.Result{}, err
	}
	a := NextAction(o, c.opts.Config)
	klog.FromContext(ctx).V(4).Info("Next action", "session", key, "action", a.Type)
	// The events of what the pass sees are stored before it acts on it: a
	// session's ended event is in the outbox before its finalizer goes.
	// Otherwise a failure to store them does not hold the session up: the
	// pass acts, and is tried again for the events.
	var events error
	if c.opts.Events != nil {
		if events = c.opts.Events.Record(ctx, s); events != nil && a.Type == RemoveFinalizer {
			return controllerutil.Result{}, fmt.Errorf("storing the session's events before it goes: %w", events)
		}
	}
	if err := c.perform(ctx, o, target, a); err != nil {
		return controllerutil.Result{}, err
	}
	record(o, a)
	if events != nil {
		return controllerutil.Result{}, fmt.Errorf("storing the session's events: %w", events)
	}
	return controllerutil.Result{RequeueAfter: a.RequeueAfter, Again: !comesBackAsEvent(a.Type)}, nil
}

// comesBackAsEvent tells whether an action's outcome reaches the queue as an
// event of a cache (Sessions, credentials Secrets, policies). The others
// (writes on a target) are followed by another pass at once. A pass right
// after a cached write would see the cache from before it and write again:
// a conflict or AlreadyExists.
func comesBackAsEvent(t ActionType) bool {
	switch t {
	case None, UpdateStatus, AddFinalizer, RemoveFinalizer, DeleteSession,
		CreatePrivateKey, WriteCertificate, DeleteCredentials, ApplyPolicy, DeletePolicy:
		return true
	}
	return false
}
