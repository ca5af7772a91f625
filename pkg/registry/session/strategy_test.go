package session

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/registry/registrytest"
)

// TestPrepareForCreateFinalizer: a server that runs the session controller
// creates every Session with the controller's finalizer, once, next to any
// the client asked for; a standalone server adds none, as nothing would
// release it.
func TestPrepareForCreateFinalizer(t *testing.T) {
	tests := []struct {
		name     string
		finalize bool
		given    []string
		want     []string
	}{
		{name: "standalone", finalize: false, want: nil},
		{name: "standalone keeps the client's", finalize: false, given: []string{"example.com/hold"}, want: []string{"example.com/hold"}},
		{name: "controllers run", finalize: true, want: []string{v1alpha1.SessionFinalizer}},
		{name: "next to the client's", finalize: true, given: []string{"example.com/hold"}, want: []string{"example.com/hold", v1alpha1.SessionFinalizer}},
		{name: "already there", finalize: true, given: []string{v1alpha1.SessionFinalizer}, want: []string{v1alpha1.SessionFinalizer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &clustergate.Session{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "sre", Finalizers: tt.given}}
			NewStrategy(registrytest.Scheme(), validation.DefaultSessionPolicy(), tt.finalize).PrepareForCreate(context.Background(), s)
			if diff := cmp.Diff(tt.want, s.Finalizers); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}
