// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// maxConflictWatches bounds the watches of conflicting Secrets; objects
// beyond it rely on Config.ConflictRecheck.
const maxConflictWatches = 200

// conflictWatches routes the changes of Secrets that objects in
// SecretConflict name, and no other object manages, to those objects. The
// controller caches only the Secrets it manages, so the deletion or release
// of someone else's Secret would otherwise be seen only at the next recheck
// (minutes). Conflicts are rare; one watch narrowed to the Secret's name per
// conflict costs one stream on the connection the controller already has.
type conflictWatches struct {
	kube kubernetes.Interface
	// enqueue queues an object for a pass after a delay.
	enqueue func(object types.NamespacedName, after time.Duration)

	mu sync.Mutex
	// lifetime bounds every watch: the controller's run, not the pass that
	// starts a watch, which ends as soon as it returns.
	lifetime context.Context
	// byObject is the Secret each conflicting object names, and the watch
	// of it.
	byObject map[types.NamespacedName]conflictWatch
}

type conflictWatch struct {
	secret types.NamespacedName
	cancel context.CancelFunc
}

func newConflictWatches(kube kubernetes.Interface, enqueue func(types.NamespacedName, time.Duration)) *conflictWatches {
	return &conflictWatches{kube: kube, enqueue: enqueue, lifetime: context.Background(), byObject: map[types.NamespacedName]conflictWatch{}}
}

// runWithin ends every watch, those started later included, when ctx ends.
func (w *conflictWatches) runWithin(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lifetime = ctx
}

// watch makes sure a change of secret, which object names and someone else
// owns, queues object. It returns at once; the watch ends with ctx, with
// stop, or after the first change.
func (w *conflictWatches) watch(object types.NamespacedName, secret *corev1.Secret) {
	key := types.NamespacedName{Namespace: secret.Namespace, Name: secret.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	if existing, ok := w.byObject[object]; ok {
		if existing.secret == key {
			return
		}
		existing.cancel()
		delete(w.byObject, object)
	}
	if len(w.byObject) >= maxConflictWatches {
		return
	}
	ctx, cancel := context.WithCancel(w.lifetime)
	w.byObject[object] = conflictWatch{secret: key, cancel: cancel}
	go w.run(ctx, object, key, secret.ResourceVersion)
}

// stop ends the watch for object, if there is one: it names a Secret it may
// use now, or is gone.
func (w *conflictWatches) stop(object types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if existing, ok := w.byObject[object]; ok {
		existing.cancel()
		delete(w.byObject, object)
	}
}

// run watches secret from resourceVersion on and queues object at its first
// change, or when the watch ends: the next pass looks again and, still in
// conflict, watches again.
func (w *conflictWatches) run(ctx context.Context, object, secret types.NamespacedName, resourceVersion string) {
	retry := time.Duration(0)
	defer func() {
		if ctx.Err() != nil {
			return // stopped: nothing to report
		}
		w.mu.Lock()
		if existing, ok := w.byObject[object]; ok && existing.secret == secret {
			existing.cancel()
			delete(w.byObject, object)
		}
		w.mu.Unlock()
		w.enqueue(object, retry)
	}()
	watcher, err := w.kube.CoreV1().Secrets(secret.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", secret.Name).String(),
		ResourceVersion: resourceVersion,
	})
	if err != nil {
		// Not allowed or not reachable: the recheck covers it; do not
		// come back at once.
		retry = 10 * time.Second
		return
	}
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-watcher.ResultChan():
			if ok && (ev.Type == watch.Bookmark || ev.Type == watch.Added && resourceVersionOf(ev.Object) == resourceVersion) {
				continue // not a change: the Secret as the pass saw it
			}
			return
		}
	}
}

func resourceVersionOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
