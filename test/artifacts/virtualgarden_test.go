// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package artifacts

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// TestVirtualGardenLayout renders both halves of the virtual-garden layout
// (docs/operations.md, "Installing on a gardener-operator landscape") and
// checks that together they hold the highly available layout with
// cert-manager, each object in the cluster it belongs in: the API, RBAC
// and admission in the virtual garden, everything that runs in the runtime
// cluster, and the server pointed at the virtual garden.
func TestVirtualGardenLayout(t *testing.T) {
	whole := render(t, layout{name: "ha with cert-manager", kustomization: `
resources: [../artifacts/overlays/ha]
components: [../artifacts/components/cert-manager]
`})
	runtime := render(t, layout{name: "virtual garden: runtime", kustomization: `
resources: [../artifacts/overlays/ha]
components: [../artifacts/components/cert-manager, ../artifacts/components/virtual-garden-runtime]
`})
	virtual := render(t, layout{name: "virtual garden: virtual", dir: "artifacts/overlays/virtual-garden"})

	// Kinds only the virtual garden holds: who may do what, and the API.
	virtualOnly := []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "APIService"}
	for kind, names := range virtual {
		if !slices.Contains(virtualOnly, kind) && !slices.Contains([]string{"Namespace", "ServiceAccount", "Service", "EndpointSlice"}, kind) {
			t.Errorf("the virtual garden, which runs no pods, gets %s %s", kind, keys(names))
		}
	}
	for kind, names := range whole {
		for name := range names {
			_, inRuntime := runtime[kind][name]
			_, inVirtual := virtual[kind][name]
			// Both clusters get the namespace and the ServiceAccount (the
			// pods run as it in the runtime cluster, its token is the
			// virtual garden's) and the Service clustergate (the virtual
			// garden's leads to the runtime's).
			wantVirtual := slices.Contains(virtualOnly, kind) || kind == "Namespace" || kind == "ServiceAccount" ||
				kind == "Service" && name == "clustergate"
			wantRuntime := !slices.Contains(virtualOnly, kind)
			if inRuntime != wantRuntime || inVirtual != wantVirtual {
				t.Errorf("%s %s: in the runtime cluster %t, in the virtual garden %t; want %t, %t", kind, name, inRuntime, inVirtual, wantRuntime, wantVirtual)
			}
		}
	}

	var server appsv1.Deployment
	if !runtime.decode(t, "Deployment", "clustergate", &server) {
		t.Fatal("no Deployment clustergate in the runtime cluster")
	}
	pod := server.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the server mounts a token of the runtime cluster, which it has no use for")
	}
	const kubeconfig = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig"
	for _, flag := range []string{"--kubeconfig", "--authentication-kubeconfig", "--authorization-kubeconfig"} {
		if !slices.Contains(pod.Containers[0].Args, flag+"="+kubeconfig) {
			t.Errorf("the server lacks %s=%s: %v", flag, kubeconfig, pod.Containers[0].Args)
		}
	}
	var projected *corev1.ProjectedVolumeSource
	for _, v := range pod.Volumes {
		if v.Name == "virtual-garden-kubeconfig" {
			projected = v.Projected
		}
	}
	if projected == nil || len(projected.Sources) != 2 || projected.Sources[1].Secret == nil ||
		projected.Sources[1].Secret.Name != "shoot-access-clustergate" {
		t.Fatalf("the generic kubeconfig volume is %+v, want the kubeconfig and the access Secret's token", projected)
	}
	var access corev1.Secret
	if !runtime.decode(t, "Secret", "shoot-access-clustergate", &access) ||
		access.Labels["resources.gardener.cloud/purpose"] != "token-requestor" ||
		access.Annotations["serviceaccount.resources.gardener.cloud/name"] != "clustergate" ||
		access.Annotations["serviceaccount.resources.gardener.cloud/namespace"] != "clustergate-system" {
		t.Errorf("the access Secret is no TokenRequestor's for clustergate/clustergate-system: %+v", access.ObjectMeta)
	}

	// The virtual garden's APIService leads to its Service, whose
	// EndpointSlice names the Service's port.
	// The fields of an APIService read here.
	var api struct {
		Spec struct {
			Service *struct{ Name, Namespace string }
		}
	}
	var svc corev1.Service
	var slice discoveryv1.EndpointSlice
	if !virtual.decode(t, "APIService", "v1alpha1.clustergate.dev", &api) || !virtual.decode(t, "Service", "clustergate", &svc) ||
		!virtual.decode(t, "EndpointSlice", "clustergate-runtime", &slice) {
		t.Fatal("the virtual garden lacks the APIService, the Service or the EndpointSlice")
	}
	if api.Spec.Service == nil || api.Spec.Service.Name != svc.Name || api.Spec.Service.Namespace != svc.Namespace {
		t.Errorf("the APIService leads to %+v, not to Service %s/%s", api.Spec.Service, svc.Namespace, svc.Name)
	}
	if svc.Spec.Selector != nil {
		t.Errorf("the virtual garden's Service selects pods: %v", svc.Spec.Selector)
	}
	if slice.Labels[discoveryv1.LabelServiceName] != svc.Name || len(slice.Ports) != 1 || slice.Ports[0].Name == nil ||
		*slice.Ports[0].Name != svc.Spec.Ports[0].Name {
		t.Errorf("the EndpointSlice %+v does not serve the Service's port %s", slice, svc.Spec.Ports[0].Name)
	}
}

// keys are a map's keys, sorted, for messages.
func keys(m map[string][]byte) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}
