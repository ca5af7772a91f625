// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestCacheTransform: the cache holds a marker instead of an intact
// kubeconfig, and a pass reads the cached Secret as it would the Secret
// itself: intact, or damaged (edited, unreadable, missing, or the marker
// written by someone), so that a damaged one is still repaired. A second
// transform, which client-go may apply to the same object, changes nothing.
func TestCacheTransform(t *testing.T) {
	notKubeconfig := []byte("not: [a kubeconfig")
	tests := []struct {
		name       string
		secret     *corev1.Secret
		wantData   map[string][]byte
		wantIntact bool
	}{
		{name: "intact: replaced by the marker", secret: secret(),
			wantData: map[string][]byte{"config": verifiedKubeconfig}, wantIntact: true},
		{name: "other keys intact or not are judged alone", secret: secret(func(s *corev1.Secret) { s.Data["other"] = []byte("x") }),
			wantData: map[string][]byte{"config": verifiedKubeconfig, "other": []byte("x")}, wantIntact: true},
		{name: "edited: kept, damaged", secret: secret(func(s *corev1.Secret) { s.Data["config"] = []byte(testKubeconfig + "# edited\n") }),
			wantData: map[string][]byte{"config": []byte(testKubeconfig + "# edited\n")}},
		{name: "matches its checksum but does not load: kept, damaged", secret: secret(func(s *corev1.Secret) {
			s.Data["config"] = notKubeconfig
			s.Annotations[v1alpha1.AnnotationChecksum] = Checksum(notKubeconfig)
		}), wantData: map[string][]byte{"config": notKubeconfig}},
		{name: "the marker written by someone: emptied, damaged", secret: secret(func(s *corev1.Secret) {
			// Decoded from the server: a copy.
			s.Data["config"] = bytes.Clone(verifiedKubeconfig)
			s.Annotations[v1alpha1.AnnotationChecksum] = Checksum(verifiedKubeconfig)
		}), wantData: map[string][]byte{"config": nil}},
		{name: "no data", secret: secret(func(s *corev1.Secret) { s.Data = nil })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.secret.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
			out, err := CacheTransform(tt.secret)
			if err != nil {
				t.Fatal(err)
			}
			cached := out.(*corev1.Secret)
			if diff := cmp.Diff(tt.wantData, cached.Data); diff != "" {
				t.Errorf("cached data (-want +got):\n%s", diff)
			}
			if cached.ManagedFields != nil {
				t.Errorf("managedFields kept")
			}
			if _, ok := readWritten(cached, "config"); ok != tt.wantIntact {
				t.Errorf("read from the cache as intact = %v, want %v", ok, tt.wantIntact)
			}
			again, err := CacheTransform(cached)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantData, again.(*corev1.Secret).Data); diff != "" {
				t.Errorf("cached data transformed again (-want +got):\n%s", diff)
			}
			if _, ok := readWritten(again.(*corev1.Secret), "config"); ok != tt.wantIntact {
				t.Errorf("transformed again, read as intact = %v, want %v", ok, tt.wantIntact)
			}
		})
	}
	if out, err := CacheTransform("not a Secret"); err != nil || out != "not a Secret" {
		t.Errorf("a non-Secret: %v, %v", out, err)
	}
}

// TestCacheTransformWatchList: an informer that fills its cache with a
// watch-list, as client-go's informers do against a kube-apiserver that
// serves one, caches an intact kubeconfig as intact. Such an informer
// transforms each listed Secret twice; a Secret cached as damaged would be
// written again by every new leader.
func TestCacheTransformWatchList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := watch.NewFakeWithChanSize(2, false)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			t.Error("listed: the informer did not use a watch-list")
			return &corev1.SecretList{}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents == nil || !*o.SendInitialEvents {
				return watch.NewFake(), nil
			}
			return events, nil
		},
	}
	listed := secret(func(s *corev1.Secret) { s.ResourceVersion = "1" })
	events.Add(listed)
	events.Action(watch.Bookmark, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})

	informer := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{})
	if err := informer.SetTransform(CacheTransform); err != nil {
		t.Fatal(err)
	}
	go informer.RunWithContext(ctx)
	synced, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if !cache.WaitForCacheSync(synced.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	obj, ok, err := informer.GetStore().GetByKey(listed.Namespace + "/" + listed.Name)
	if err != nil || !ok {
		t.Fatalf("cached: %v, %v", ok, err)
	}
	if _, ok := readWritten(obj.(*corev1.Secret), "config"); !ok {
		t.Errorf("the listed Secret is cached as damaged: %q", obj.(*corev1.Secret).Data["config"])
	}
}
