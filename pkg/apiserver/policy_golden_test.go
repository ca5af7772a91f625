// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
)

// goldenPolicies holds the policies the server writes for the sessions of
// policySessions under the shipped data-plane component. The Istio proof
// (test/tools/istio-authz) feeds them with the component through Istio's
// own authorization builder; TestDesiredPolicyGolden keeps them current
// (UPDATE_GOLDEN=1 rewrites them).
const goldenPolicies = "testdata/authorizationpolicies.yaml"

// shippedComponent is the data-plane component whose flags and
// AuthenticationConfiguration the golden policies follow.
const shippedComponent = "../../artifacts/components/data-plane"

// policySessions: the owner's own session and another owner's, both named
// by the shipped issuer, and a garden user's, whom no data-plane issuer names.
var policySessions = []struct{ namespace, name, uid, owner string }{
	{"sre", "fix-etcd", "11111111-1111-1111-1111-111111111111", "dataplane:alice@example.com"},
	{"sre", "bobs", "22222222-2222-2222-2222-222222222222", "dataplane:bob@example.com"},
	{"sre", "garden-only", "33333333-3333-3333-3333-333333333333", "alice@example.com"},
}

// shippedPolicySettings is what the server makes of the shipped component:
// the --istio-* values its kustomization passes (the command's tests show
// each flag lands in these fields) and the issuers readFiles reads from its
// AuthenticationConfiguration.
func shippedPolicySettings(t *testing.T) sessions.IstioPolicyConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(shippedComponent, "authentication.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "authentication.yaml")
	if err := os.WriteFile(file, []byte(cm.Data["authentication.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &ExtraConfig{}
	c.DataPlane.AuthenticationConfigFile = file
	kustomization, err := os.ReadFile(filepath.Join(shippedComponent, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy := &c.Controllers.Sessions.IstioPolicy
	for _, line := range strings.Split(string(kustomization), "\n") {
		flag, ok := strings.CutPrefix(strings.TrimSpace(line), "value: --istio-")
		if !ok {
			continue
		}
		name, value, _ := strings.Cut(flag, "=")
		switch name {
		case "namespace":
			policy.Namespace = value
		case "workload-selector":
			if policy.Selector, err = labels.ConvertSelectorToLabelsMap(value); err != nil {
				t.Fatal(err)
			}
		case "gateway-port":
			if policy.Port, err = strconv.Atoi(value); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("the shipped component passes --istio-%s, which this test does not know", name)
		}
	}
	if err := c.readFiles(); err != nil {
		t.Fatal(err)
	}
	if policy.Namespace == "" || len(policy.Issuers) == 0 {
		t.Fatalf("the shipped component turns no Istio policy on: %+v", policy)
	}
	return *policy
}

// TestDesiredPolicyGolden: the policies of the shipped layout are the ones
// the Istio proof evaluates.
func TestDesiredPolicyGolden(t *testing.T) {
	settings := shippedPolicySettings(t)
	var out bytes.Buffer
	for _, ps := range policySessions {
		s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: ps.namespace, Name: ps.name, UID: types.UID(ps.uid)}}
		s.Spec.Owner.Username = ps.owner
		p := &istiosecurityv1.AuthorizationPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "security.istio.io/v1", Kind: "AuthorizationPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: sessions.PolicyName(s), Namespace: settings.Namespace},
		}
		sessions.DesiredPolicy(s, settings).DeepCopyInto(&p.Spec)
		data, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("# " + ps.namespace + "/" + ps.name + " of " + ps.owner + "\n")
		out.Write(data)
		out.WriteString("---\n")
	}
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(goldenPolicies, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(goldenPolicies)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(golden), out.String()); diff != "" {
		t.Errorf("%s is not what the server writes (UPDATE_GOLDEN=1 rewrites it; then run test/tools/istio-authz) (-file +now):\n%s", goldenPolicies, diff)
	}
}
