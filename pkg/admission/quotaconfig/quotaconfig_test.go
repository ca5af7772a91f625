// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package quotaconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

func TestConfigurationCountsObjects(t *testing.T) {
	evaluators := map[string]quota.Evaluator{}
	for _, e := range Configuration().Evaluators() {
		evaluators[e.GroupResource().Resource] = e
	}
	tests := []struct {
		resource string
		obj      runtime.Object
		op       admission.Operation
		want     corev1.ResourceName
		handles  bool
	}{
		{resource: "sessions", obj: &clustergate.Session{}, op: admission.Create, want: "count/sessions.clustergate.dev", handles: true},
		{resource: "gardenerclusterkubeconfigs", obj: &clustergate.GardenerClusterKubeconfig{}, op: admission.Create,
			want: "count/gardenerclusterkubeconfigs.clustergate.dev", handles: true},
		// An update changes no count.
		{resource: "sessions", obj: &clustergate.Session{}, op: admission.Update, want: "count/sessions.clustergate.dev"},
	}
	for _, tt := range tests {
		t.Run(string(tt.op)+" "+tt.resource, func(t *testing.T) {
			e, ok := evaluators[tt.resource]
			if !ok {
				t.Fatalf("no evaluator for %s", tt.resource)
			}
			a := admission.NewAttributesRecord(tt.obj, nil, clustergate.Kind("Any").WithVersion("v1alpha1"), "sre", "x",
				clustergate.Resource(tt.resource).WithVersion("v1alpha1"), "", tt.op, &metav1.CreateOptions{}, false, nil)
			if got := e.Handles(a); got != tt.handles {
				t.Errorf("Handles = %v, want %v", got, tt.handles)
			}
			usage, err := e.Usage(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if q := usage[tt.want]; q.Value() != 1 || len(usage) != 1 {
				t.Errorf("usage = %v, want %s: 1", usage, tt.want)
			}
		})
	}
}

// wantsQuota is a plugin that wants a quota configuration.
type wantsQuota struct {
	admission.Interface
	got quota.Configuration
}

func (w *wantsQuota) SetQuotaConfiguration(c quota.Configuration) { w.got = c }
func (w *wantsQuota) ValidateInitialization() error               { return nil }

func TestInitializer(t *testing.T) {
	c := Configuration()
	p := &wantsQuota{}
	Initializer{Configuration: c}.Initialize(p)
	if p.got != c {
		t.Errorf("the plugin got %v, want the configuration", p.got)
	}
	// Other plugins are left alone.
	Initializer{Configuration: c}.Initialize(admission.NewHandler(admission.Create))
}
