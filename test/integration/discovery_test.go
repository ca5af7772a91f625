// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/kube-openapi/pkg/spec3"

	v1alpha1 "github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/test/utils/openapicheck"
)

// groupResources are the resources discovery lists for clustergate.dev/v1alpha1.
func groupResources(t *testing.T) []metav1.APIResource {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	return list.APIResources
}

func TestDiscovery(t *testing.T) {
	got := map[string]string{}
	for _, r := range groupResources(t) {
		got[r.Name] = fmt.Sprintf("namespaced=%v short=%v categories=%v", r.Namespaced, r.ShortNames, r.Categories)
	}
	want := map[string]string{
		"sessions":                          "namespaced=true short=[sess] categories=[clustergate]",
		"sessions/status":                   "namespaced=true short=[] categories=[]",
		"sessions/proxy":                    "namespaced=true short=[] categories=[]",
		"sessions/approval":                 "namespaced=true short=[] categories=[]",
		"sessions/extension":                "namespaced=true short=[] categories=[]",
		"sessions/kubeconfig":               "namespaced=true short=[] categories=[]",
		"sessions/moderation":               "namespaced=true short=[] categories=[]",
		"sessions/recordings":               "namespaced=true short=[] categories=[]",
		"gardenerclusterkubeconfigs":        "namespaced=true short=[gck] categories=[clustergate]",
		"gardenerclusterkubeconfigs/status": "namespaced=true short=[] categories=[]",
		"sessionlocks":                      "namespaced=false short=[slock] categories=[clustergate]",
		"sessionapprovalpolicies":           "namespaced=false short=[sap] categories=[clustergate]",
		"shoots":                            "namespaced=true short=[] categories=[]",
		"clusters":                          "namespaced=true short=[] categories=[]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
}

// The targets of authorization are listed with a kind and no verb, and
// nothing about them is served.
func TestTargetsAreVirtual(t *testing.T) {
	got := map[string]string{}
	for _, r := range groupResources(t) {
		got[r.Name] = fmt.Sprintf("kind=%s singular=%s verbs=%v", r.Kind, r.SingularName, r.Verbs)
	}
	for name, want := range map[string]string{"shoots": "kind=Shoot singular=shoot verbs=[]", "clusters": "kind=Cluster singular=cluster verbs=[]"} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"shoots", "shoots/local", "clusters", "clusters/mc-1"} {
		err := client.Get().AbsPath("/apis/clustergate.dev/v1alpha1/namespaces/sre/" + path).Do(context.Background()).Error()
		if !apierrors.IsNotFound(err) {
			t.Errorf("GET %s: %v, want 404", path, err)
		}
	}
}

func TestOpenAPIHasDeclaredModelNames(t *testing.T) {
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Get().AbsPath("/openapi/v2").Do(context.Background()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dev.clustergate.v1alpha1.Session", "dev.clustergate.v1alpha1.GardenerClusterKubeconfig"} {
		if _, ok := doc.Definitions[want]; !ok {
			t.Errorf("definition %s missing", want)
		}
	}
	problems, err := openapicheck.Problems(raw, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// The OpenAPI v3 document is what kubectl reads once per object it creates
// or applies: small (no deprecated watch paths, parameters published once),
// every reference resolving, and fieldValidation still found where kubectl
// looks for it, so that kubectl keeps validating on the server.
func TestOpenAPIV3ForKubectl(t *testing.T) {
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Get().AbsPath("/openapi/v3/apis/clustergate.dev/v1alpha1").Do(context.Background()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	refs := 0
	for path, item := range doc.Paths.Paths {
		if strings.Contains(path, "/watch/") {
			t.Errorf("deprecated watch path %s is published", path)
		}
		params := item.Parameters
		for _, op := range []*spec3.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch} {
			if op != nil {
				params = append(params, op.Parameters...)
			}
		}
		for _, p := range params {
			if ref := p.Ref.String(); ref != "" {
				refs++
				if doc.Components.Parameters[strings.TrimPrefix(ref, "#/components/parameters/")] == nil {
					t.Errorf("%s: reference %s does not resolve", path, ref)
				}
			}
		}
	}
	if refs == 0 {
		t.Error("no parameter is shared")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	verifier := resource.NewQueryParamVerifierV3(dynamic.NewForConfigOrDie(config), dc.OpenAPIV3(), resource.QueryParamFieldValidation)
	for _, kind := range []string{"Session", "GardenerClusterKubeconfig", "SessionApprovalPolicy"} {
		if err := verifier.HasSupport(v1alpha1.SchemeGroupVersion.WithKind(kind)); err != nil {
			t.Errorf("kubectl would validate %s objects on the client: %v", kind, err)
		}
	}
}

func TestTable(t *testing.T) {
	ctx := context.Background()
	if _, err := clientset(t).ClustergateV1alpha1().Sessions("table").Create(ctx, newSession("fix-etcd"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Get().AbsPath("/apis/clustergate.dev/v1alpha1/namespaces/table/sessions").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if diff := cmp.Diff([]string{"Name", "Owner", "Target", "Access", "Expires", "Ready", "Scope", "Expires-At", "Approval", "Last-Used", "Reason", "Age"}, columns); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[1] != "alice" {
		t.Errorf("rows = %+v", table.Rows)
	}
}
