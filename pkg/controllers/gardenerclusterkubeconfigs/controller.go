// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	informers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

// FieldManager is the field manager of the controller's status writes.
const FieldManager = "clustergate-kubeconfig-controller"

// Options configure a Controller.
type Options struct {
	Config
	// Expiration is the validity asked of Gardener for each kubeconfig.
	Expiration time.Duration
	// Workers is the number of objects handled in parallel.
	Workers int
	// GardenerWorkers is the number of requests to Gardener in flight at
	// once; zero is Workers.
	GardenerWorkers int
}

// Controller keeps the Secrets of GardenerClusterKubeconfigs.
type Controller struct {
	opts     Options
	client   versioned.Interface
	kube     kubernetes.Interface
	gardener gardener.Requester
	clock    clock.WithTicker
	recorder events.EventRecorder

	objects   listers.GardenerClusterKubeconfigLister
	secrets   corelisters.SecretLister
	locks     listers.SessionLockLister
	hasSynced []cache.InformerSynced
	// queue takes every pass; passes that ask Gardener for a kubeconfig move
	// to gardenerQueue, so that finalizers and statuses of thousands of
	// objects never wait behind Gardener's pace.
	queue, gardenerQueue *controllerutil.Queue
	// conflicts watches the Secrets of objects in SecretConflict.
	conflicts *conflictWatches
	// removeHandlers removes the controller's event handlers from the
	// informers, which the rest of the server shares.
	removeHandlers func()

	// pending remembers, per object, the kubeconfig this replica wrote last
	// until the Secret cache shows it: a pass that sees an older Secret must
	// not ask Gardener again.
	pendingMu sync.Mutex
	pending   map[types.NamespacedName]pendingWrite
	// failures are Gardener's failed requests, observed by the next pass.
	failures *controllerutil.Failures
}

// New returns a controller over the given informers. The Secret informer
// must be restricted with ManagedSecretSelector.
func New(opts Options, client versioned.Interface, kube kubernetes.Interface, g gardener.Requester,
	objects informers.GardenerClusterKubeconfigInformer, secrets coreinformers.SecretInformer, locks informers.SessionLockInformer,
	recorder events.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		opts: opts, client: client, kube: kube, gardener: g, clock: clk, recorder: recorder,
		objects:   objects.Lister(),
		secrets:   secrets.Lister(),
		locks:     locks.Lister(),
		hasSynced: []cache.InformerSynced{objects.Informer().HasSynced, secrets.Informer().HasSynced, locks.Informer().HasSynced},
		pending:   map[types.NamespacedName]pendingWrite{},
		failures:  controllerutil.NewFailures(),
	}
	c.queue = controllerutil.NewQueue("kubeconfig-controller", clk, time.Second, 5*time.Minute, c.sync)
	c.gardenerQueue = controllerutil.NewQueue("kubeconfig-gardener", clk, time.Second, 5*time.Minute, c.syncGardener)
	c.conflicts = newConflictWatches(kube, c.queue.AddAfter)
	remove, err := controllerutil.AddHandlers(
		controllerutil.InformerHandler{Informer: objects.Informer(), Handler: c.queue.EventHandler(controllerutil.ObjectKey)},
		// A managed Secret's changes queue its object, so that deleted or
		// edited Secrets are repaired at once.
		controllerutil.InformerHandler{Informer: secrets.Informer(), Handler: c.queue.EventHandler(func(obj any) (types.NamespacedName, bool) {
			s, ok := obj.(*corev1.Secret)
			if !ok || s.Labels[v1alpha1.LabelClusterName] == "" {
				return types.NamespacedName{}, false
			}
			return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[v1alpha1.LabelClusterName]}, true
		})},
		// A lock may start or stop holding any object: an update may move
		// its target from one Shoot to another.
		controllerutil.InformerHandler{Informer: locks.Informer(), Handler: c.queue.KeysEventHandler(c.allObjects)})
	if err != nil {
		return nil, err
	}
	c.removeHandlers = remove
	return c, nil
}

// Run handles objects until ctx ends, then lets go of the informers.
func (c *Controller) Run(ctx context.Context) {
	defer c.removeHandlers()
	c.conflicts.runWithin(ctx)
	gardenerWorkers := c.opts.GardenerWorkers
	if gardenerWorkers <= 0 {
		gardenerWorkers = c.opts.Workers
	}
	// Both queues finish the syncs they hold before Run returns.
	var wg sync.WaitGroup
	wg.Go(func() { c.gardenerQueue.Run(ctx, gardenerWorkers, c.hasSynced...) })
	c.queue.Run(ctx, c.opts.Workers, c.hasSynced...)
	wg.Wait()
}

// sync observes one object and performs its next action.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) (controllerutil.Result, error) {
	observed, action, err := c.next(ctx, key)
	if err != nil {
		return controllerutil.Result{}, err
	}
	if o := observed.Object; o != nil && o.DeletionTimestamp == nil && observed.Secret != nil && ownership(o, observed.Secret) == foreign {
		c.conflicts.watch(key, observed.Secret)
	} else {
		c.conflicts.stop(key)
	}
	if observed.Object == nil {
		return controllerutil.Result{}, nil
	}
	klog.FromContext(ctx).V(4).Info("Next action", "object", key, "action", action.Type, "reason", action.Reason)
	if action.Type == WriteKubeconfig {
		c.gardenerQueue.Add(key)
		return controllerutil.Result{}, nil
	}
	return controllerutil.Result{RequeueAfter: action.RequeueAfter}, c.perform(ctx, observed, action)
}

// syncGardener performs a pass that asks Gardener for a kubeconfig, if the
// object still needs one. The main queue decides everything else: whatever
// changed the object's next action since it was handed over reached the main
// queue as an event, and the write's outcome reaches it when done.
func (c *Controller) syncGardener(ctx context.Context, key types.NamespacedName) (controllerutil.Result, error) {
	observed, action, err := c.next(ctx, key)
	if observed.Object == nil || err != nil || action.Type != WriteKubeconfig {
		return controllerutil.Result{}, err
	}
	if c.cacheBehind(key, observed.Secret) {
		return controllerutil.Result{RequeueAfter: time.Second}, nil
	}
	if err := c.perform(ctx, observed, action); err != nil {
		return controllerutil.Result{}, err
	}
	// A failure is observed state no informer reports: the main queue
	// looks at it now. A written Secret reaches it as an event anyway.
	if _, failed := c.failures.Get(observed.Object.UID); failed {
		c.queue.Add(key)
	}
	return controllerutil.Result{}, nil
}

// pendingWrite is a kubeconfig written but not yet seen in the cache.
type pendingWrite struct {
	checksum string
	at       time.Time
}

// pendingTimeout bounds how long a write may stay unseen; a Secret deleted
// right after the write is never seen with it.
const pendingTimeout = 30 * time.Second

// cacheBehind reports whether the cached Secret is older than the last
// kubeconfig this replica wrote for the object.
func (c *Controller) cacheBehind(key types.NamespacedName, secret *corev1.Secret) bool {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	p, ok := c.pending[key]
	if !ok {
		return false
	}
	if (secret != nil && secret.Annotations[v1alpha1.AnnotationChecksum] == p.checksum) || c.clock.Since(p.at) > pendingTimeout {
		delete(c.pending, key)
		return false
	}
	return true
}

// wrote remembers the kubeconfig just written for the object, until the
// cache shows it.
func (c *Controller) wrote(key types.NamespacedName, checksum string) {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	c.pending[key] = pendingWrite{checksum: checksum, at: c.clock.Now()}
}
