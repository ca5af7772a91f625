// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllerutil

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Result is what a pass asks of the queue.
type Result struct {
	// RequeueAfter looks at the object again after this long; zero does not.
	RequeueAfter time.Duration
	// Again looks at the object again at once: the pass wrote something
	// whose change may not come back as an event.
	Again bool
}

// SyncFunc handles one object; an error retries it with backoff.
type SyncFunc func(ctx context.Context, key types.NamespacedName) (Result, error)

// Queue is a controller's rate-limited queue of object keys and the
// workers that drain it.
type Queue struct {
	name  string
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	sync  SyncFunc
}

// NewQueue returns a queue that retries failures after base, doubling up to
// limit.
func NewQueue(name string, clk clock.WithTicker, base, limit time.Duration, sync SyncFunc) *Queue {
	return &Queue{name: name, sync: sync, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](base, limit),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: name, Clock: clk})}
}

// Add queues a key.
func (q *Queue) Add(key types.NamespacedName) { q.queue.Add(key) }

// AddAfter queues a key after a delay.
func (q *Queue) AddAfter(key types.NamespacedName, d time.Duration) { q.queue.AddAfter(key, d) }

// ObjectKey is the key of an object itself, for EventHandler.
func ObjectKey(obj any) (types.NamespacedName, bool) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, true
}

// EventHandler queues the key that keyOf returns for every added, updated
// or deleted object; keyOf returns false for objects to ignore.
func (q *Queue) EventHandler(keyOf func(obj any) (types.NamespacedName, bool)) cache.ResourceEventHandler {
	return q.KeysEventHandler(func(obj any) []types.NamespacedName {
		if key, ok := keyOf(obj); ok {
			return []types.NamespacedName{key}
		}
		return nil
	})
}

// KeysEventHandler queues every key that keysOf returns for every added,
// updated or deleted object: for objects that many others depend on.
func (q *Queue) KeysEventHandler(keysOf func(obj any) []types.NamespacedName) cache.ResourceEventHandler {
	add := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		for _, key := range keysOf(obj) {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add}
}

// Run waits for the caches, then runs workers until ctx ends.
func (q *Queue) Run(ctx context.Context, workers int, hasSynced ...cache.InformerSynced) {
	defer utilruntime.HandleCrash()
	defer q.queue.ShutDown()
	logger := klog.FromContext(ctx).WithName(q.name)
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
		return
	}
	logger.Info("Started", "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for q.next(ctx) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
	// Workers blocked in Get return; the others finish what they hold.
	q.queue.ShutDown()
	wg.Wait()
}

// inFlightGrace is how long a sync in flight when its queue stops may go
// on: a kubeconfig fetched from Gardener is written rather than lost, and
// asked for again by the next leader.
const inFlightGrace = 3 * time.Second

func (q *Queue) next(ctx context.Context) bool {
	key, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(key)
	if ctx.Err() != nil {
		// Stopping: what is queued is the next leader's.
		return false
	}
	syncCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(inFlightGrace, cancel) })()
	result, err := q.sync(syncCtx, key)
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Will retry", "object", key, "err", err)
		q.queue.AddRateLimited(key)
	case result.Again:
		q.queue.Forget(key)
		q.queue.Add(key)
	default:
		q.queue.Forget(key)
		if result.RequeueAfter > 0 {
			q.queue.AddAfter(key, result.RequeueAfter)
		}
	}
	return true
}
