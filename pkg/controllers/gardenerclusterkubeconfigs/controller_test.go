// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"testing"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestCacheBehind: after a write, a pass that still sees the old Secret in
// the cache must not ask Gardener again.
func TestCacheBehind(t *testing.T) {
	key := types.NamespacedName{Namespace: "kcp", Name: "c-123"}
	withChecksum := func(sum string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationChecksum: sum}}}
	}
	tests := []struct {
		name    string
		written bool
		elapsed time.Duration
		secret  *corev1.Secret
		want    bool
	}{
		{name: "nothing written", secret: withChecksum("old")},
		{name: "cache still shows the old Secret", written: true, secret: withChecksum("old"), want: true},
		{name: "cache has no Secret yet", written: true, want: true},
		{name: "cache caught up", written: true, secret: withChecksum("new")},
		{name: "never seen within the timeout", written: true, elapsed: pendingTimeout + time.Second, secret: withChecksum("old")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			c := &Controller{clock: clk, pending: map[types.NamespacedName]pendingWrite{}}
			if tt.written {
				c.wrote(key, "new")
			}
			clk.Step(tt.elapsed)
			if got := c.cacheBehind(key, tt.secret); got != tt.want {
				t.Errorf("cacheBehind = %v, want %v", got, tt.want)
			}
			if !tt.want && c.cacheBehind(key, tt.secret) {
				t.Errorf("the record outlived the pass that cleared it")
			}
		})
	}
}
