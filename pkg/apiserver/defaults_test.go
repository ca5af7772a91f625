// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"strings"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// TestDefaultExtraConfigValidate: the parts' defaults pass the parts' own
// checks, and each part's check is asked.
func TestDefaultExtraConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*ExtraConfig)
		want   string
	}{
		{name: "the defaults", change: func(*ExtraConfig) {}},
		{name: "Gardener", change: func(c *ExtraConfig) { c.Controllers.Gardener.Project = "shop" },
			want: "--gardener-kubeconfig is required with --gardener-project"},
		{name: "kubeconfig controller", change: func(c *ExtraConfig) { c.Controllers.GardenerClusterKubeconfigs.RotationRatio = 1 },
			want: "--kubeconfig-rotation-ratio must lie between 0 and 1"},
		{name: "sessions controller", change: func(c *ExtraConfig) { c.Controllers.Sessions.Workers = 0 },
			want: "--session-workers must be at least 1"},
		{name: "lock retention", change: func(c *ExtraConfig) { c.Controllers.LockRetention = -1 },
			want: "--session-lock-retention may not be negative"},
		{name: "proxy", change: func(c *ExtraConfig) { c.ProxyLimits.PerOwner = -1 }, want: "proxy limits may not be negative"},
		{name: "recording", change: func(c *ExtraConfig) { c.Recording.Mode = "sometimes" }, want: "--recording must be one of"},
		{name: "Istio on the server's port", change: func(c *ExtraConfig) {
			c.Controllers.Sessions.IstioPolicy.Namespace, c.Controllers.Sessions.IstioPolicy.Port = "gw", 8443
		}, want: "--istio-gateway-port 8443 is a port the server listens on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultExtraConfig("platform")
			tt.change(&c)
			err := utilerrors.NewAggregate(c.Validate(8443))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPassNamespaceDown: the server's namespace reaches the sessions
// controller and, unless another is given, the Lease.
func TestPassNamespaceDown(t *testing.T) {
	for _, tt := range []struct{ lease, wantLease string }{{"", "platform"}, {"leases", "leases"}} {
		c := DefaultExtraConfig("platform")
		c.Controllers.LeaseNamespace = tt.lease
		c.passNamespaceDown()
		if c.Controllers.Sessions.Namespace != "platform" || c.Controllers.LeaseNamespace != tt.wantLease {
			t.Errorf("lease %q: sessions in %q, Lease in %q; want platform, %q", tt.lease, c.Controllers.Sessions.Namespace, c.Controllers.LeaseNamespace, tt.wantLease)
		}
	}
}

// TestFeatureDefaults: the generic server's features that keep memory for
// what clustergate does not use are off unless a flag turns them on.
func TestFeatureDefaults(t *testing.T) {
	NewRecommendedOptions()
	for _, f := range []featuregate.Feature{apiserverfeatures.ListFromCacheSnapshot, apiserverfeatures.SizeBasedListCostEstimate} {
		t.Run(string(f), func(t *testing.T) {
			if utilfeature.DefaultFeatureGate.Enabled(f) {
				t.Fatalf("%s is on by default", f)
			}
			// --feature-gates sets the same gate after the defaults.
			if err := utilfeature.DefaultMutableFeatureGate.Set(string(f) + "=true"); err != nil {
				t.Fatal(err)
			}
			defer func() {
				utilruntime.Must(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): false}))
			}()
			if !utilfeature.DefaultFeatureGate.Enabled(f) {
				t.Errorf("--feature-gates=%s=true leaves it off", f)
			}
		})
	}
}
