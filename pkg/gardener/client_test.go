// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1alpha1 "github.com/gardener/gardener/pkg/apis/authentication/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

func TestRequestKubeconfig(t *testing.T) {
	expiry := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var gotPath string
	var gotSeconds int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.Path
		var req authenticationv1alpha1.AdminKubeconfigRequest
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		if req.Spec.ExpirationSeconds != nil {
			gotSeconds = *req.Spec.ExpirationSeconds
		}
		status := func(code int, reason metav1.StatusReason) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason})
		}
		switch r.URL.Path {
		case "/apis/core.gardener.cloud/v1beta1/projects/p":
			_, _ = w.Write([]byte(`{"spec":{"namespace":"garden-p"}}`))
		case "/apis/core.gardener.cloud/v1beta1/projects/shop":
			// A project's namespace need not be garden-<name>.
			_, _ = w.Write([]byte(`{"spec":{"namespace":"garden-shopping"}}`))
		case "/apis/core.gardener.cloud/v1beta1/projects/new":
			// Not reconciled yet: no namespace.
			_, _ = w.Write([]byte(`{"spec":{}}`))
		case "/apis/core.gardener.cloud/v1beta1/projects/gone":
			status(http.StatusNotFound, metav1.StatusReasonNotFound)
		case "/apis/core.gardener.cloud/v1beta1/namespaces/garden-p/shoots/missing/adminkubeconfig":
			status(http.StatusNotFound, metav1.StatusReasonNotFound)
		case "/apis/core.gardener.cloud/v1beta1/namespaces/garden-p/shoots/secret/adminkubeconfig":
			status(http.StatusForbidden, metav1.StatusReasonForbidden)
		case "/apis/core.gardener.cloud/v1beta1/namespaces/garden-p/shoots/new/adminkubeconfig":
			status(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
		case "/apis/core.gardener.cloud/v1beta1/namespaces/garden-p/shoots/broken/adminkubeconfig":
			status(http.StatusInternalServerError, metav1.StatusReasonInternalError)
		default:
			req.Status = authenticationv1alpha1.AdminKubeconfigRequestStatus{Kubeconfig: []byte(kubeconfigYAML), ExpirationTimestamp: metav1.NewTime(expiry)}
			_ = json.NewEncoder(w).Encode(req)
		}
	}))
	defer srv.Close()

	client, err := NewClientForConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "p")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		// project is "p" unless set.
		project    string
		shoot      string
		expiration time.Duration
		wantPath   string
		wantSecs   int64
		wantReason Reason
	}{
		{shoot: "c-1", expiration: 24 * time.Hour, wantSecs: 86400,
			wantPath: "/apis/core.gardener.cloud/v1beta1/namespaces/garden-p/shoots/c-1/adminkubeconfig"},
		{shoot: "c-2", expiration: time.Minute, wantSecs: 600,
			wantPath: "/apis/core.gardener.cloud/v1beta1/namespaces/garden-p/shoots/c-2/adminkubeconfig"},
		{shoot: "missing", expiration: time.Hour, wantSecs: 3600, wantReason: ShootNotFound},
		{shoot: "secret", expiration: time.Hour, wantSecs: 3600, wantReason: Forbidden},
		{shoot: "new", expiration: time.Hour, wantSecs: 3600, wantReason: ShootNotReady},
		{shoot: "broken", expiration: time.Hour, wantSecs: 3600, wantReason: GardenerUnavailable},
		{project: "shop", shoot: "prod", expiration: time.Hour, wantSecs: 3600,
			wantPath: "/apis/core.gardener.cloud/v1beta1/namespaces/garden-shopping/shoots/prod/adminkubeconfig"},
		{project: "gone", shoot: "prod", expiration: time.Hour, wantReason: ProjectNotFound},
		{project: "new", shoot: "prod", expiration: time.Hour, wantReason: ProjectNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.project+"/"+tt.shoot, func(t *testing.T) {
			gotSeconds = 0
			kc, err := client.RequestKubeconfig(context.Background(), Shoot{Project: cmp.Or(tt.project, "p"), Name: tt.shoot}, tt.expiration)
			if gotSeconds != tt.wantSecs {
				t.Errorf("expirationSeconds = %d, want %d", gotSeconds, tt.wantSecs)
			}
			if tt.wantReason != "" {
				if err == nil || ReasonOf(err) != tt.wantReason {
					t.Fatalf("error %v, want reason %s", err, tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotPath != tt.wantPath {
				t.Errorf("path = %s, want %s", gotPath, tt.wantPath)
			}
			if string(kc.Data) != kubeconfigYAML || !kc.ExpiresAt.Equal(expiry) {
				t.Errorf("kubeconfig = %q expiring %v", kc.Data, kc.ExpiresAt)
			}
		})
	}
}

func TestUnreachableGardener(t *testing.T) {
	client, err := NewClientForConfig(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, "p")
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.RequestKubeconfig(context.Background(), Shoot{Project: "p", Name: "c"}, time.Hour)
	if ReasonOf(err) != GardenerUnavailable {
		t.Errorf("got %v, want GardenerUnavailable", err)
	}
}

// TestShootLabels reads a Shoot's labels in its project's namespace: a
// missing Shoot has none, and a Gardener that fails says why.
func TestShootLabels(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/core.gardener.cloud/v1beta1/projects/shop":
			_, _ = w.Write([]byte(`{"spec":{"namespace":"garden-shopping"}}`))
		case "/apis/core.gardener.cloud/v1beta1/namespaces/garden-shopping/shoots/prod":
			_, _ = w.Write([]byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"prod","labels":{"env":"production"}},"spec":{"region":"x"}}`))
		case "/apis/core.gardener.cloud/v1beta1/namespaces/garden-shopping/shoots/gone":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":404,"reason":"NotFound"}`))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"reason":"InternalError"}`))
		}
	}))
	defer srv.Close()
	client, err := NewClientForConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		shoot      string
		want       map[string]string
		wantReason Reason
	}{
		{shoot: "prod", want: map[string]string{"env": "production"}},
		{shoot: "gone"},
		{shoot: "broken", wantReason: GardenerUnavailable},
	} {
		t.Run(tt.shoot, func(t *testing.T) {
			got, err := client.ShootLabels(context.Background(), Shoot{Name: tt.shoot})
			if tt.wantReason != "" {
				if err == nil || ReasonOf(err) != tt.wantReason {
					t.Fatalf("ShootLabels: %v, want %s", err, tt.wantReason)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("ShootLabels = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
