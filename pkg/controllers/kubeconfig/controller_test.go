package kubeconfig

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
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

// TestHandedOver: the lead counts from the first hand-over to Gardener's
// queue, the wait for a worker included; a second hand-over while the
// object waits does not restart it, and a taken record is gone.
func TestHandedOver(t *testing.T) {
	key := types.NamespacedName{Namespace: "kcp", Name: "c-123"}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	start := clk.Now()
	c := &Controller{clock: clk, handedOver: map[types.NamespacedName]time.Time{},
		gardenerQueue: controllerutil.NewQueue("test", clk, time.Second, time.Minute, nil)}
	c.handOver(key)
	clk.Step(3 * time.Second)
	c.handOver(key)
	clk.Step(2 * time.Second)
	if got := c.takeHandedOver(key); !got.Equal(start) {
		t.Errorf("handed over at %s, want the first hand-over %s", got, start)
	}
	if got := c.takeHandedOver(key); !got.Equal(clk.Now()) {
		t.Errorf("a taken record returned %s, want now (no lead)", got)
	}
}
