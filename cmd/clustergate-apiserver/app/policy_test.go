// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/apiserver/apiservertest"
)

// goldenPolicies holds the policies the server writes for the sessions of
// policySessions under the shipped data-plane component. The Istio proof
// (test/tools/istio-authz) feeds them with the component through Istio's
// own authorization builder; TestDesiredPolicyGolden keeps them current
// (UPDATE_GOLDEN=1 rewrites them).
const goldenPolicies = "testdata/authorizationpolicies.yaml"

// policySessions: the owner's own session and another owner's, both named
// by the shipped issuer, and a garden user's, whom no data-plane issuer names.
var policySessions = []struct{ namespace, name, uid, owner string }{
	{"sre", "fix-etcd", "11111111-1111-1111-1111-111111111111", "dataplane:alice@example.com"},
	{"sre", "bobs", "22222222-2222-2222-2222-222222222222", "dataplane:bob@example.com"},
	{"sre", "garden-only", "33333333-3333-3333-3333-333333333333", "alice@example.com"},
}

// shippedConfig is what the server makes of the Istio flags and the
// AuthenticationConfiguration of artifacts/components/data-plane.
func shippedConfig(t *testing.T) *apiserver.Config {
	t.Helper()
	data, err := os.ReadFile("../../../artifacts/components/data-plane/authentication.yaml")
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
	kustomization, err := os.ReadFile("../../../artifacts/components/data-plane/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--data-plane-authentication-config=" + file}
	for _, line := range strings.Split(string(kustomization), "\n") {
		if flag, ok := strings.CutPrefix(strings.TrimSpace(line), "value: --istio-"); ok {
			flags = append(flags, "--istio-"+flag)
		}
	}
	return completedConfig(t, t.TempDir(), flags...)
}

// TestDesiredPolicyGolden: the policies of the shipped layout are the ones
// the Istio proof evaluates.
func TestDesiredPolicyGolden(t *testing.T) {
	cfg := shippedConfig(t)
	var out bytes.Buffer
	for _, ps := range policySessions {
		s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Namespace: ps.namespace, Name: ps.name, UID: types.UID(ps.uid)}}
		s.Spec.Owner.Username = ps.owner
		data, err := yaml.Marshal(apiservertest.AuthorizationPolicy(cfg, s))
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
