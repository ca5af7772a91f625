// Package integration runs the whole clustergate-apiserver in the test
// process, on an embedded etcd, and drives it through the generated clientset.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/cmd/clustergate-apiserver/app"
	v1alpha1 "github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	applyv1alpha1 "github.com/clustergate/clustergate/pkg/generated/applyconfiguration/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/test/openapicheck"
)

// config reaches the server started by TestMain as the loopback client,
// which is in system:masters.
var config *rest.Config

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "clustergate-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped, err := startServer(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the server:", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-stopped
	return code
}

// startServer starts the server on a free loopback port and waits until it
// is ready. The returned channel closes once the server and its etcd stopped.
func startServer(ctx context.Context, dir string) (<-chan struct{}, error) {
	o := app.NewOptions()
	o.DataDir = dir
	serving := o.RecommendedOptions.SecureServing
	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		return nil, err
	}
	serving.Listener, serving.BindPort = listener, port
	if err := o.Complete(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	server, stopEtcd, err := o.Start(ctx)
	if err != nil {
		return nil, err
	}
	config = rest.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer stopEtcd()
		if err := server.GenericAPIServer.PrepareRun().RunWithContext(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "server stopped:", err)
		}
	}()

	client, err := rawClient()
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return client.Get().AbsPath("/readyz").Do(ctx).Error() == nil, nil
	})
	return stopped, err
}

// rawClient returns a client for plain paths such as /readyz and /openapi/v2.
func rawClient() (rest.Interface, error) {
	c, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return c.Discovery().RESTClient(), nil
}

func clientset(t *testing.T) *versioned.Clientset {
	t.Helper()
	c, err := versioned.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSession(name string) *v1alpha1.Session {
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SessionSpec{
			TTL:         metav1.Duration{Duration: time.Hour},
			Owner:       v1alpha1.SessionOwner{Username: "alice"},
			AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
			Target:      v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "local"}},
		},
	}
}

func TestDiscovery(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range list.APIResources {
		got[r.Name] = fmt.Sprintf("namespaced=%v short=%v categories=%v", r.Namespaced, r.ShortNames, r.Categories)
	}
	want := map[string]string{
		"sessions":                          "namespaced=true short=[sess] categories=[clustergate]",
		"sessions/status":                   "namespaced=true short=[] categories=[]",
		"sessions/proxy":                    "namespaced=true short=[] categories=[]",
		"sessions/approval":                 "namespaced=true short=[] categories=[]",
		"sessions/extension":                "namespaced=true short=[] categories=[]",
		"sessions/kubeconfig":               "namespaced=true short=[] categories=[]",
		"gardenerclusterkubeconfigs":        "namespaced=true short=[gck] categories=[clustergate]",
		"gardenerclusterkubeconfigs/status": "namespaced=true short=[] categories=[]",
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
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range list.APIResources {
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

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	sessions := clientset(t).ClustergateV1alpha1().Sessions("lifecycle")

	w, err := sessions.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.owner.username=alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := sessions.Create(ctx, newSession("fix-etcd"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.ExpiresAt == nil || !created.Status.ExpiresAt.Time.Equal(created.CreationTimestamp.Add(time.Hour)) {
		t.Errorf("expiresAt = %v, want creation + 1h (%v)", created.Status.ExpiresAt, created.CreationTimestamp)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*v1alpha1.Session).Name != "fix-etcd" {
			t.Errorf("first event = %s %v, want ADDED fix-etcd", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event for the created session")
	}

	created.Spec.TTL.Duration = 2 * time.Hour
	_, err = sessions.Update(ctx, created, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("changing spec.ttl: got %v, want 422 Invalid", err)
	}

	list, err := sessions.List(ctx, metav1.ListOptions{FieldSelector: "spec.target.shoot.name=local"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("list by shoot: %d items, want 1", len(list.Items))
	}
	if _, err := sessions.List(ctx, metav1.ListOptions{FieldSelector: "spec.ttl=1h"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: got %v, want 400", err)
	}

	if err := sessions.Delete(ctx, "fix-etcd", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Get(ctx, "fix-etcd", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

func TestInvalidSessionNamesFields(t *testing.T) {
	s := newSession("bad")
	s.Spec.TTL.Duration = 0
	s.Spec.AccessLevel.Group = "root"
	_, err := clientset(t).ClustergateV1alpha1().Sessions("invalid").Create(context.Background(), s, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	var fields []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	if diff := cmp.Diff([]string{"spec.ttl", "spec.accessLevel.group"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	kubeconfigs := clientset(t).ClustergateV1alpha1().GardenerClusterKubeconfigs("apply")

	apply := applyv1alpha1.GardenerClusterKubeconfig("c-123", "apply").
		WithLabels(map[string]string{"kyma-project.io/runtime-id": "c-123"}).
		WithSpec(applyv1alpha1.GardenerClusterKubeconfigSpec().
			WithShoot(applyv1alpha1.ShootReference().WithName("c-123")).
			WithKubeconfig(applyv1alpha1.KubeconfigTarget().WithSecret(applyv1alpha1.SecretKeyReference().WithName("kubeconfig-c-123"))))
	got, err := kubeconfigs.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "provisioner"})
	if err != nil {
		t.Fatal(err)
	}
	if secret := got.Spec.Kubeconfig.Secret; secret.Namespace != "apply" || secret.Key != "config" {
		t.Errorf("secret = %+v, want namespace and key defaulted", secret)
	}

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	status := applyv1alpha1.GardenerClusterKubeconfig("c-123", "apply").
		WithStatus(applyv1alpha1.GardenerClusterKubeconfigStatus().
			WithState(v1alpha1.KubeconfigStateReady).
			WithLastSyncTime(now).
			WithObservedGeneration(got.Generation))
	got, err = kubeconfigs.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "clustergate-controller"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != v1alpha1.KubeconfigStateReady {
		t.Errorf("state = %q after status apply", got.Status.State)
	}

	managers := map[string]string{}
	for _, mf := range got.ManagedFields {
		managers[mf.Manager] = mf.Subresource
	}
	if diff := cmp.Diff(map[string]string{"provisioner": "", "clustergate-controller": "status"}, managers); diff != "" {
		t.Errorf("managedFields managers (-want +got):\n%s", diff)
	}

	// A second apply by the same manager that leaves the labels out removes them.
	got, err = kubeconfigs.Apply(ctx, apply.WithLabels(nil), metav1.ApplyOptions{FieldManager: "provisioner"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != v1alpha1.KubeconfigStateReady {
		t.Errorf("an apply to the main resource changed status.state to %q", got.Status.State)
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
	if _, err := client.Get().AbsPath("/openapi/v3/apis/clustergate.dev/v1alpha1").Do(context.Background()).Raw(); err != nil {
		t.Errorf("openapi v3: %v", err)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/metrics"} {
		if err := client.Get().AbsPath(path).Do(context.Background()).Error(); err != nil {
			t.Errorf("GET %s: %v", path, err)
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
	if diff := cmp.Diff([]string{"Name", "Owner", "Target", "Access", "Expires", "Ready", "Expires-At", "Approval", "Reason", "Age"}, columns); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[1] != "alice" {
		t.Errorf("rows = %+v", table.Rows)
	}
}

func TestOwnerStampedFromCreator(t *testing.T) {
	s := newSession("stamped")
	s.Spec.Owner = v1alpha1.SessionOwner{}
	got, err := clientset(t).ClustergateV1alpha1().Sessions("owner").Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The loopback client is the server's own user, in system:masters.
	if got.Spec.Owner.Username != "system:apiserver" || len(got.Spec.Owner.Groups) == 0 {
		t.Errorf("owner = %+v, want the creator system:apiserver with its groups", got.Spec.Owner)
	}
}

func TestProxyRefusals(t *testing.T) {
	ctx := context.Background()
	sessions := clientset(t).ClustergateV1alpha1().Sessions("proxy")
	notMine := newSession("alices")
	if _, err := sessions.Create(ctx, notMine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := newSession("mine")
	mine.Spec.Owner = v1alpha1.SessionOwner{}
	if _, err := sessions.Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := rawClient()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path      string
		code      int
		retryable bool
		message   string
	}{
		{path: "sessions/alices/proxy/api", code: 403, message: "only the session's owner may use its proxy"},
		// Standalone, nothing mints credentials: the session never gets Ready.
		{path: "sessions/mine/proxy/api", code: 503, retryable: true, message: "is not ready"},
		{path: "sessions/mine/kubeconfig", code: 503, retryable: true, message: "--external-url"},
		{path: "sessions/nobody/proxy/api", code: 404, message: "not found"},
	}
	t.Run("a path climbing out of the target's", func(t *testing.T) {
		hc, err := rest.HTTPClientFor(config)
		if err != nil {
			t.Fatal(err)
		}
		// Sent as is: the client does not clean it.
		resp, err := hc.Get(config.Host + "/apis/clustergate.dev/v1alpha1/namespaces/proxy/sessions/mine/proxy/api/../../other/api")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `may not have a \"..\" segment`) {
			t.Errorf("got %d %s, want 400 naming the segment", resp.StatusCode, body)
		}
	})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			// No retries: the test wants to see the Retry-After, not obey it.
			result := client.Get().AbsPath("/apis/clustergate.dev/v1alpha1/namespaces/proxy/" + tt.path).MaxRetries(0).Do(ctx)
			var code int
			result.StatusCode(&code)
			err := result.Error()
			if code != tt.code || err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("got %d %v, want %d with %q", code, err, tt.code, tt.message)
			}
			if _, retry := apierrors.SuggestsClientDelay(err); retry != tt.retryable {
				t.Errorf("retry-after suggested = %v, want %v", retry, tt.retryable)
			}
		})
	}
}
