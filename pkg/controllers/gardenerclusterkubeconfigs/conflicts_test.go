// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestConflictWatches: an object whose Secret someone else owns is queued
// as soon as that Secret changes, and not once its watch was stopped.
func TestConflictWatches(t *testing.T) {
	object := types.NamespacedName{Namespace: "kcp", Name: "c-123"}
	tests := []struct {
		name string
		// change changes the watched Secret; nil changes nothing.
		change func(ctx context.Context, kube *kubefake.Clientset) error
		stop   bool
		// stopRun ends the controller's run before the change.
		stopRun bool
		queued  bool
	}{
		{name: "the Secret is deleted", queued: true, change: func(ctx context.Context, kube *kubefake.Clientset) error {
			return kube.CoreV1().Secrets("kcp").Delete(ctx, "taken", metav1.DeleteOptions{})
		}},
		{name: "the Secret is released", queued: true, change: func(ctx context.Context, kube *kubefake.Clientset) error {
			s := taken()
			s.Labels = map[string]string{"released": "true"}
			_, err := kube.CoreV1().Secrets("kcp").Update(ctx, s, metav1.UpdateOptions{})
			return err
		}},
		{name: "nothing changes"},
		{name: "the controller stopped before the change", stopRun: true, change: func(ctx context.Context, kube *kubefake.Clientset) error {
			return kube.CoreV1().Secrets("kcp").Delete(context.Background(), "taken", metav1.DeleteOptions{})
		}},
		{name: "stopped before the change", stop: true, change: func(ctx context.Context, kube *kubefake.Clientset) error {
			return kube.CoreV1().Secrets("kcp").Delete(ctx, "taken", metav1.DeleteOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kube := kubefake.NewClientset(taken())
			watching := make(chan struct{})
			// The change must come after the watch began, or the fake,
			// which keeps no history, would not report it.
			kube.PrependWatchReactor("secrets", func(clienttesting.Action) (bool, watch.Interface, error) {
				close(watching)
				return false, nil, nil
			})
			queued := make(chan types.NamespacedName, 1)
			w := newConflictWatches(kube, func(key types.NamespacedName, _ time.Duration) { queued <- key })
			w.runWithin(ctx)
			w.watch(object, taken())
			w.watch(object, taken()) // the same conflict again: one watch
			<-watching
			if tt.stop {
				w.stop(object)
			}
			if tt.stopRun {
				cancel()
			}
			if tt.change != nil {
				if err := tt.change(ctx, kube); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case key := <-queued:
				if !tt.queued || key != object {
					t.Errorf("queued %v, want nothing queued", key)
				}
			case <-time.After(time.Second):
				if tt.queued {
					t.Errorf("%v not queued after the change", object)
				}
			}
		})
	}
}

func taken() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kcp", Name: "taken", ResourceVersion: "5", Labels: map[string]string{"owner": "someone"}}}
}
