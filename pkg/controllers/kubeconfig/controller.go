// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package kubeconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	applyv1alpha1 "github.com/clustergate/clustergate/pkg/generated/applyconfiguration/clustergate/v1alpha1"
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

// ManagedSecretSelector selects the Secrets the controller manages; its
// Secret informer (transformed by CacheTransform) watches only those, so that the cache does not hold every
// Secret of a control plane with 100,000 clusters.
func ManagedSecretSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate})
}

// New returns a controller over the given informers. The Secret informer
// must be restricted with ManagedSecretSelector.
func New(opts Options, client versioned.Interface, kube kubernetes.Interface, g gardener.Requester,
	objects informers.GardenerClusterKubeconfigInformer, secrets coreinformers.SecretInformer,
	recorder events.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		opts: opts, client: client, kube: kube, gardener: g, clock: clk, recorder: recorder,
		objects:   objects.Lister(),
		secrets:   secrets.Lister(),
		hasSynced: []cache.InformerSynced{objects.Informer().HasSynced, secrets.Informer().HasSynced},
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
		})})
	if err != nil {
		return nil, err
	}
	c.removeHandlers = remove
	return c, nil
}

// Run handles objects until ctx ends, then lets go of the informers.
func (c *Controller) Run(ctx context.Context) {
	defer c.removeHandlers()
	gardenerWorkers := c.opts.GardenerWorkers
	if gardenerWorkers <= 0 {
		gardenerWorkers = c.opts.Workers
	}
	go c.gardenerQueue.Run(ctx, gardenerWorkers, c.hasSynced...)
	c.queue.Run(ctx, c.opts.Workers, c.hasSynced...)
}

// sync observes one object and performs its next action.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) (controllerutil.Result, error) {
	observed, action, err := c.next(ctx, key)
	if err != nil {
		return controllerutil.Result{}, err
	}
	if o := observed.Object; o != nil && o.DeletionTimestamp == nil && observed.Secret != nil && ownership(o, observed.Secret) == foreign {
		c.conflicts.watch(ctx, key, observed.Secret)
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

func (c *Controller) wrote(key types.NamespacedName, checksum string) {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	c.pending[key] = pendingWrite{checksum: checksum, at: c.clock.Now()}
}

// next observes an object and computes its next action; Observed.Object is
// nil when the object is gone.
func (c *Controller) next(ctx context.Context, key types.NamespacedName) (Observed, Action, error) {
	obj, err := c.objects.GardenerClusterKubeconfigs(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return Observed{}, Action{}, nil
	}
	if err != nil {
		return Observed{}, Action{}, err
	}
	observed, err := c.observe(ctx, obj)
	if err != nil {
		return Observed{}, Action{}, err
	}
	return observed, NextAction(observed, c.opts.Config), nil
}

// observe gathers the object's Secrets. The Secret named in spec is read
// from the server when the cache, which holds only managed Secrets, lacks
// it: it may be someone else's.
func (c *Controller) observe(ctx context.Context, obj *v1alpha1.GardenerClusterKubeconfig) (Observed, error) {
	o := Observed{Object: obj, Now: c.clock.Now()}
	if f, ok := c.failures.Get(obj.UID); ok {
		o.Failure = &f
	}
	ref := obj.Spec.Kubeconfig.Secret
	secret, err := c.secrets.Secrets(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		secret, err = c.kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, err
	default:
		o.Secret = secret
	}
	managed, err := c.secrets.Secrets(obj.Namespace).List(labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: obj.Name}))
	if err != nil {
		return o, err
	}
	for _, s := range managed {
		if s.Name != ref.Name {
			o.Stale = append(o.Stale, s)
		}
	}
	return o, nil
}

func (c *Controller) perform(ctx context.Context, o Observed, a Action) error {
	obj := o.Object
	objects := c.client.ClustergateV1alpha1().GardenerClusterKubeconfigs(obj.Namespace)
	switch a.Type {
	case None:
		return nil
	case AddFinalizer:
		patched := obj.DeepCopy()
		patched.Finalizers = append(patched.Finalizers, v1alpha1.KubeconfigFinalizer)
		_, err := objects.Update(ctx, patched, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	case RemoveFinalizer:
		patched := obj.DeepCopy()
		patched.Finalizers = slices.DeleteFunc(slices.Clone(patched.Finalizers), func(f string) bool { return f == v1alpha1.KubeconfigFinalizer })
		_, err := objects.Update(ctx, patched, metav1.UpdateOptions{FieldManager: FieldManager})
		c.opts.Schedule.Forget(obj.UID)
		c.failures.Forget(obj.UID)
		return controllerutil.IgnoreNotFound(err)
	case RemoveForceAnnotation:
		patched := obj.DeepCopy()
		delete(patched.Annotations, v1alpha1.AnnotationForceRotation)
		delete(patched.Annotations, v1alpha1.AnnotationForceRotationShort)
		_, err := objects.Update(ctx, patched, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	case DeleteSecret:
		err := c.kube.CoreV1().Secrets(obj.Spec.Kubeconfig.Secret.Namespace).Delete(ctx, a.SecretName, metav1.DeleteOptions{})
		if err == nil {
			c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "SecretDeleted", "Delete", "Deleted Secret %s", a.SecretName)
		}
		return controllerutil.IgnoreNotFound(err)
	case SyncSecretMetadata:
		// A patch of the labels alone: the cached Secret holds no
		// kubeconfig to send back (CacheTransform).
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": SecretLabels(obj)}})
		if err != nil {
			return err
		}
		_, err = c.kube.CoreV1().Secrets(o.Secret.Namespace).Patch(ctx, o.Secret.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		return err
	case UpdateStatus:
		return c.applyStatus(ctx, obj, a.Status)
	case WriteKubeconfig:
		return c.writeKubeconfig(ctx, o, a)
	}
	return fmt.Errorf("unknown action %q", a.Type)
}

// writeKubeconfig asks Gardener for a kubeconfig and writes the Secret in one
// create or update, so the Secret never holds a partial or empty kubeconfig.
// When Gardener fails, nothing is written: the failure is remembered for the
// next pass, which reports it and decides when to ask again.
func (c *Controller) writeKubeconfig(ctx context.Context, o Observed, a Action) error {
	obj := o.Object
	start := c.clock.Now()
	kc, err := c.gardener.RequestKubeconfig(ctx, obj.Spec.Shoot.Name, gardener.Admin, c.opts.Expiration)
	if err != nil {
		reason := gardener.ReasonOf(err)
		writeFailures.WithLabelValues(string(reason)).Inc()
		c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(reason), "RequestKubeconfig",
			"Requesting a kubeconfig for shoot %q failed: %v", obj.Spec.Shoot.Name, err)
		c.failures.Record(obj.UID, string(reason), fmt.Sprintf("requesting a kubeconfig for shoot %q: %v", obj.Spec.Shoot.Name, err), c.clock.Now())
		return nil
	}

	now := c.clock.Now().UTC()
	ref := obj.Spec.Kubeconfig.Secret
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace}, Type: corev1.SecretTypeOpaque}
	if !a.Create {
		s = o.Secret.DeepCopy()
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	maps.Copy(s.Labels, SecretLabels(obj))
	delete(s.Annotations, v1alpha1.AnnotationForceRotation)
	delete(s.Annotations, v1alpha1.AnnotationForceRotationShort)
	maps.Copy(s.Annotations, map[string]string{
		v1alpha1.AnnotationLastSync:  now.Format(time.RFC3339),
		v1alpha1.AnnotationExpiresAt: kc.ExpiresAt.UTC().Format(time.RFC3339),
		v1alpha1.AnnotationChecksum:  Checksum(kc.Data),
		v1alpha1.AnnotationReason:    a.Reason,
	})
	if a.ForcedBy != "" {
		s.Annotations[v1alpha1.AnnotationForcedBy] = a.ForcedBy
	}
	s.Data = map[string][]byte{ref.Key: kc.Data}

	secrets := c.kube.CoreV1().Secrets(ref.Namespace)
	if a.Create {
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: FieldManager})
	} else {
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: FieldManager})
	}
	if err != nil {
		writeFailures.WithLabelValues(ReasonSecretWriteFailed).Inc()
		return err
	}
	c.opts.Schedule.Observe(c.clock.Since(start))
	c.wrote(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, Checksum(kc.Data))
	c.failures.Forget(obj.UID)
	writes.WithLabelValues(a.Reason).Inc()
	c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, a.Reason, "WriteKubeconfig",
		"Wrote a kubeconfig valid until %s to Secret %s", kc.ExpiresAt.UTC().Format(time.RFC3339), ref.Name)
	return nil
}

// applyStatus writes the status with server-side apply.
func (c *Controller) applyStatus(ctx context.Context, obj *v1alpha1.GardenerClusterKubeconfig, s *Status) error {
	conditionStatus := metav1.ConditionFalse
	if s.State == v1alpha1.KubeconfigStateReady {
		conditionStatus = metav1.ConditionTrue
	}
	status := applyv1alpha1.GardenerClusterKubeconfigStatus().WithState(s.State).WithObservedGeneration(s.ObservedGeneration).
		WithConditions(controllerutil.ApplyConditions(obj.Status.Conditions, metav1.Condition{Type: v1alpha1.KubeconfigConditionReady, Status: conditionStatus,
			Reason: s.Reason, Message: s.Message, ObservedGeneration: s.ObservedGeneration})...)
	if s.LastSyncTime != nil {
		status.WithLastSyncTime(*s.LastSyncTime)
	}
	if s.ExpirationTime != nil {
		status.WithExpirationTime(*s.ExpirationTime)
	}
	_, err := c.client.ClustergateV1alpha1().GardenerClusterKubeconfigs(obj.Namespace).ApplyStatus(ctx,
		applyv1alpha1.GardenerClusterKubeconfig(obj.Name, obj.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}
