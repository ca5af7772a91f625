// Package e2e tests clustergate as users meet it: registered with a real
// kube-apiserver through an APIService, next to a real gardener-apiserver and
// a shoot kube-apiserver, driven with kubectl. All tests share one control
// plane, started by TestMain from the binaries `make test-e2e` builds.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/test/openapicheck"
)

var cp *localcluster.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(root, "_output", "bin")
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "gardener-apiserver", "clustergate-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s is missing: run `make test-e2e`, which builds it\n", b)
			return 1
		}
	}
	start := time.Now()
	var err error
	cp, err = localcluster.Start(context.Background(), localcluster.Options{
		Dir:      filepath.Join(root, "_output", "e2e"),
		BinDir:   bin,
		RepoRoot: root,
		Logf:     func(format string, args ...any) { fmt.Printf("e2e: "+format+"\n", args...) },
		// Replicas share the garden etcd, so a test can add one.
		SharedEtcd: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the control plane:", err)
		return 1
	}
	fmt.Printf("e2e: control plane ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	defer cp.Stop()
	return m.Run()
}

// kubectl runs kubectl as admin and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlAs(t, cp.AdminKubeconfig, args...)
}

func kubectlAs(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := cp.Kubectl(context.Background(), kubeconfig, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// kubectlErr runs kubectl and returns its error, which must not be nil.
func kubectlErr(t *testing.T, kubeconfig string, stdin string, args ...string) string {
	t.Helper()
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	out, err := cp.Kubectl(context.Background(), kubeconfig, in, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error; output:\n%s", strings.Join(args, " "), out)
	}
	return err.Error()
}

func apply(t *testing.T, kubeconfig, manifest string, args ...string) string {
	t.Helper()
	out, err := cp.Kubectl(context.Background(), kubeconfig, []byte(manifest), append([]string{"apply", "-f", "-"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// namespace creates a namespace for one test and, when the test ends, deletes
// it with everything in it through the garden's namespace controller and
// waits until it is gone: every test also checks that clustergate's
// resources never hold up a namespace's deletion.
func namespace(t *testing.T, name string) string {
	t.Helper()
	kubectl(t, "create", "namespace", name)
	t.Cleanup(func() { deleteNamespace(t, name, namespaceDeletionBound) })
	return name
}

// namespaceDeletionBound is how long the deletion of a test's namespace may
// take. The namespace controller looks again 8 s after it found objects
// with finalizers (half its 15 s estimate, plus 1), so a namespace holding
// Sessions or GardenerClusterKubeconfigs takes one such round at least.
const namespaceDeletionBound = 30 * time.Second

// deleteNamespace deletes a namespace, waits until it is gone and returns
// how long that took; it fails the test if it takes longer than bound.
func deleteNamespace(t *testing.T, name string, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, nil,
		"delete", "namespace", name, "--wait", "--timeout="+bound.String())
	took := time.Since(start)
	if err != nil {
		conditions, _ := cp.Kubectl(context.Background(), cp.AdminKubeconfig, nil,
			"get", "namespace", name, "-o", "jsonpath={.status.conditions}")
		t.Errorf("namespace %s not gone within %s: %v: %s\nconditions: %s", name, bound, err, out, conditions)
	}
	return took
}

// grant binds the ClusterRoles to user in namespace ns.
func grant(t *testing.T, ns, user string, clusterRoles ...string) {
	t.Helper()
	for _, role := range clusterRoles {
		kubectl(t, "-n", ns, "create", "rolebinding", user+"-"+strings.TrimPrefix(role, "clustergate:"), "--clusterrole="+role, "--user="+user)
	}
}

func sessionManifest(name, owner string) string {
	ownerLine := ""
	if owner != "" {
		ownerLine = "  owner: {username: " + owner + "}\n"
	}
	return fmt.Sprintf(`apiVersion: clustergate.dev/v1alpha1
kind: Session
metadata:
  name: %s
spec:
  ttl: 1h
%s  accessLevel: {group: viewer}
  target: {shoot: {name: local}}
`, name, ownerLine)
}

func TestAPIServiceAvailable(t *testing.T) {
	out := kubectl(t, "get", "apiservice", "v1alpha1.clustergate.dev", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	if out != "True" {
		t.Fatalf("APIService Available = %q", out)
	}
}

func TestAPIResources(t *testing.T) {
	out := kubectl(t, "api-resources", "--api-group=clustergate.dev", "--no-headers")
	for _, want := range [][]string{
		{"gardenerclusterkubeconfigs", "gck", "clustergate.dev/v1alpha1", "true", "GardenerClusterKubeconfig"},
		{"sessions", "sess", "clustergate.dev/v1alpha1", "true", "Session"},
	} {
		if !containsLine(out, want) {
			t.Errorf("api-resources lacks %v:\n%s", want, out)
		}
	}
	// The targets of authorization are in discovery, so that kubectl maps
	// them (kubectl auth can-i, create role: TestRBAC, TestTargetAuthorization),
	// without a verb, so that api-resources leaves them out and nothing serves them.
	var discovery struct {
		Resources []struct {
			Name, Kind string
			Verbs      []string
		}
	}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "--raw", "/apis/clustergate.dev/v1alpha1")), &discovery); err != nil {
		t.Fatal(err)
	}
	virtual := map[string]string{}
	for _, r := range discovery.Resources {
		if len(r.Verbs) == 0 {
			virtual[r.Name] = r.Kind
		}
	}
	if want := map[string]string{"shoots": "Shoot", "clusters": "Cluster"}; !reflect.DeepEqual(virtual, want) {
		t.Errorf("resources without verbs %v, want %v", virtual, want)
	}
	if strings.Contains(out, "Shoot") || strings.Contains(out, "Cluster ") {
		t.Errorf("api-resources lists a virtual resource:\n%s", out)
	}
	// Gardener's shoots still come first for kubectl.
	if got := kubectl(t, "-n", "garden-"+localcluster.Project, "get", "shoots", "-o", "name"); strings.TrimSpace(got) != "shoot.core.gardener.cloud/"+localcluster.Shoot {
		t.Errorf("kubectl get shoots = %q, want Gardener's", got)
	}
	msg := kubectlErr(t, cp.AdminKubeconfig, "", "-n", "default", "get", "shoots.clustergate.dev")
	if !strings.Contains(msg, "the server could not find the requested resource") {
		t.Errorf("listing the virtual shoots: %s", msg)
	}
}

func containsLine(out string, fields []string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}

func TestTables(t *testing.T) {
	ns := namespace(t, "tables")
	apply(t, cp.AdminKubeconfig, sessionManifest("fix-etcd", ""), "-n", ns)
	kubectl(t, "-n", ns, "apply", "-f", filepath.Join(cp.RepoRoot(), "artifacts", "examples", "gardenerclusterkubeconfig.yaml"))

	tests := []struct {
		args   []string
		header string
		row    []string
	}{
		{args: []string{"get", "sess"}, header: "NAME OWNER TARGET ACCESS EXPIRES READY AGE",
			row: []string{"fix-etcd", "admin", "shoot/local", "viewer"}},
		{args: []string{"get", "gck"}, header: "NAME SHOOT SECRET STATE LAST-SYNC AGE",
			row: []string{"local", "local", "kubeconfig-local"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			lines := strings.Split(strings.TrimSpace(kubectl(t, append([]string{"-n", ns}, tt.args...)...)), "\n")
			if got := strings.Join(strings.Fields(lines[0]), " "); got != tt.header {
				t.Errorf("header = %q, want %q", got, tt.header)
			}
			if tt.row != nil && (len(lines) < 2 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), strings.Join(tt.row, " "))) {
				t.Errorf("first row %q, want it to start with %v", lines[1:], tt.row)
			}
		})
	}
}

func TestCategory(t *testing.T) {
	ns := namespace(t, "category")
	apply(t, cp.AdminKubeconfig, sessionManifest("fix-etcd", ""), "-n", ns)
	kubectl(t, "-n", ns, "apply", "-f", filepath.Join(cp.RepoRoot(), "artifacts", "examples", "gardenerclusterkubeconfig.yaml"))
	out := kubectl(t, "-n", ns, "get", "clustergate", "-o", "name")
	for _, want := range []string{"session.clustergate.dev/fix-etcd", "gardenerclusterkubeconfig.clustergate.dev/local"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get clustergate lacks %s:\n%s", want, out)
		}
	}
}

func TestExplainAndOpenAPI(t *testing.T) {
	out := kubectl(t, "explain", "session.spec.ttl")
	if !strings.Contains(out, "how long the session lasts") {
		t.Errorf("explain session.spec.ttl:\n%s", out)
	}

	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	raw := kubectl(t, "get", "--raw", "/openapi/v2")
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dev.clustergate.v1alpha1.Session", "dev.clustergate.v1alpha1.GardenerClusterKubeconfig"} {
		if _, ok := doc.Definitions[want]; !ok {
			t.Errorf("merged /openapi/v2 lacks %s", want)
		}
	}
	// The merged document holds every group's models; ours must resolve and
	// none may be named after a Go path.
	problems, err := openapicheck.Problems([]byte(raw), "dev.clustergate.")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestServerSideApply(t *testing.T) {
	ns := namespace(t, "ssa")
	manifest := `apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata:
  name: c-123
  labels: {kyma-project.io/runtime-id: c-123}
spec:
  shoot: {name: c-123}
  kubeconfig: {secret: {name: kubeconfig-c-123}}
`
	apply(t, cp.AdminKubeconfig, manifest, "-n", ns, "--server-side", "--field-manager=provisioner")
	managers := kubectl(t, "-n", ns, "get", "gck", "c-123", "--show-managed-fields",
		"-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}`)
	// The controller manages the finalizer and the status alongside.
	if !strings.Contains(managers, "provisioner/Apply/ ") {
		t.Errorf("managedFields = %q, want provisioner's apply", managers)
	}
	secret := kubectl(t, "-n", ns, "get", "gck", "c-123", "-o", "jsonpath={.spec.kubeconfig.secret.namespace}/{.spec.kubeconfig.secret.key}")
	if secret != ns+"/config" {
		t.Errorf("secret namespace/key = %q, want %s/config (defaulted)", secret, ns)
	}
}

func TestWatch(t *testing.T) {
	ns := namespace(t, "watch")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	printed := make(chan string, 1)
	go func() {
		// kubectl's output is collected until it is stopped below.
		out, _ := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ns, "get", "sessions", "-w", "--output-watch-events", "--no-headers")
		printed <- string(out)
	}()
	time.Sleep(2 * time.Second) // let the watch start before the event
	apply(t, cp.AdminKubeconfig, sessionManifest("watched", ""), "-n", ns)
	time.Sleep(2 * time.Second) // let the event arrive
	cancel()
	if out := <-printed; !strings.Contains(out, "ADDED") || !strings.Contains(out, "watched") {
		t.Fatalf("watch printed %q, want an ADDED event for watched", out)
	}
}

func TestInvalidObjectNamesField(t *testing.T) {
	ns := namespace(t, "invalid")
	bad := strings.Replace(sessionManifest("too-long", ""), "ttl: 1h", "ttl: 48h", 1)
	msg := kubectlErr(t, cp.AdminKubeconfig, bad, "-n", ns, "apply", "-f", "-")
	if !strings.Contains(msg, "is invalid") || !strings.Contains(msg, "spec.ttl") || !strings.Contains(msg, "must be at most 24h0m0s") {
		t.Errorf("error does not name spec.ttl and its limit: %s", msg)
	}
	crossNamespace := `apiVersion: clustergate.dev/v1alpha1
kind: GardenerClusterKubeconfig
metadata: {name: sneaky}
spec:
  shoot: {name: local}
  kubeconfig: {secret: {name: stolen, namespace: kube-system}}
`
	msg = kubectlErr(t, cp.AdminKubeconfig, crossNamespace, "-n", ns, "apply", "-f", "-")
	if !strings.Contains(msg, "spec.kubeconfig.secret.namespace") {
		t.Errorf("error does not name spec.kubeconfig.secret.namespace: %s", msg)
	}
}

func TestRBAC(t *testing.T) {
	team := namespace(t, "team-a")
	other := namespace(t, "team-b")
	grant(t, team, "alice", "clustergate:session-user", "clustergate:target-viewer")
	grant(t, team, "root", "clustergate:session-admin")
	// An assigned owner needs a grant on the target as much as a creator.
	grant(t, team, "bob", "clustergate:target-viewer")
	alice := userKubeconfig(t, "alice", "sre")
	nobody := userKubeconfig(t, "nobody")
	root := userKubeconfig(t, "root")

	t.Run("no binding: 403", func(t *testing.T) {
		msg := kubectlErr(t, nobody, "", "-n", team, "get", "sessions")
		if !strings.Contains(msg, "Forbidden") && !strings.Contains(msg, "forbidden") {
			t.Errorf("got %s, want forbidden", msg)
		}
	})

	t.Run("session-user works in its namespace, owner stamped", func(t *testing.T) {
		apply(t, alice, sessionManifest("alice-1", ""), "-n", team)
		owner := kubectlAs(t, alice, "-n", team, "get", "session", "alice-1", "-o", "jsonpath={.spec.owner.username} {.spec.owner.groups}")
		if owner != `alice ["sre","system:authenticated"]` {
			t.Errorf("owner = %q, want alice with her groups", owner)
		}
		kubectlAs(t, alice, "-n", team, "delete", "session", "alice-1")
	})

	t.Run("session-user gets 403 elsewhere", func(t *testing.T) {
		msg := kubectlErr(t, alice, sessionManifest("alice-2", ""), "-n", other, "apply", "-f", "-")
		if !strings.Contains(msg, "forbidden") {
			t.Errorf("got %s, want forbidden", msg)
		}
	})

	t.Run("naming another owner needs assign", func(t *testing.T) {
		msg := kubectlErr(t, alice, sessionManifest("for-bob", "bob"), "-n", team, "apply", "-f", "-")
		if !strings.Contains(msg, `may not open a session owned by "bob"`) {
			t.Errorf("got %s, want the assign refusal", msg)
		}
		apply(t, root, sessionManifest("for-bob", "bob"), "-n", team)
		if owner := kubectl(t, "-n", team, "get", "session", "for-bob", "-o", "jsonpath={.spec.owner.username}"); owner != "bob" {
			t.Errorf("owner = %q, want bob", owner)
		}
	})

	// Resources as kubectl names them: RESOURCE.GROUP[/NAME][:SUBRESOURCE].
	tests := []struct {
		user, verb, resource, ns string
		want                     string
	}{
		{"alice", "create", "sessions.clustergate.dev:proxy", team, "yes"},
		{"alice", "get", "sessions.clustergate.dev:kubeconfig", team, "yes"},
		{"alice", "patch", "sessions.clustergate.dev", team, "yes"},
		{"alice", "update", "sessions.clustergate.dev", team, "no"},
		{"alice", "assign", "sessions.clustergate.dev", team, "no"},
		{"alice", "revoke", "sessions.clustergate.dev", team, "no"},
		{"alice", "deletecollection", "sessions.clustergate.dev", team, "no"},
		{"alice", "create", "sessions.clustergate.dev:proxy", other, "no"},
		{"alice", "viewer", "shoots.clustergate.dev/local", team, "yes"},
		{"alice", "viewer", "clusters.clustergate.dev/mc-1", team, "yes"},
		{"alice", "admin", "shoots.clustergate.dev/local", team, "no"},
		{"alice", "viewer", "shoots.clustergate.dev/local", other, "no"},
		{"root", "assign", "sessions.clustergate.dev", team, "yes"},
		{"root", "revoke", "sessions.clustergate.dev", team, "yes"},
		{"root", "deletecollection", "sessions.clustergate.dev", team, "yes"},
		// session-admin grants no target either.
		{"root", "viewer", "shoots.clustergate.dev/local", team, "no"},
		{"nobody", "create", "sessions.clustergate.dev:proxy", team, "no"},
		{"alice", "create", "gardenerclusterkubeconfigs.clustergate.dev", team, "no"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("can-i %s %s as %s in %s", tt.verb, tt.resource, tt.user, tt.ns), func(t *testing.T) {
			resource, subresource, _ := strings.Cut(tt.resource, ":")
			args := []string{"auth", "can-i", tt.verb, resource, "-n", tt.ns, "--as", tt.user}
			if subresource != "" {
				args = append(args, "--subresource", subresource)
			}
			out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, nil, args...)
			// kubectl auth can-i exits 1 for "no"; its stderr, in the
			// error, warns of custom verbs, and would of unknown resources,
			// which it would then look up in the wrong group.
			if got := strings.TrimSpace(string(out)); got != tt.want || (err != nil && strings.Contains(err.Error(), "doesn't have a resource type")) {
				t.Errorf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}

	t.Run("view aggregates read access", func(t *testing.T) {
		kubectl(t, "-n", other, "create", "rolebinding", "carol-view", "--clusterrole=view", "--user=carol")
		carol := userKubeconfig(t, "carol")
		kubectlAs(t, carol, "-n", other, "get", "sessions,gck")
		msg := kubectlErr(t, carol, sessionManifest("carol-1", ""), "-n", other, "apply", "-f", "-")
		if !strings.Contains(msg, "forbidden") {
			t.Errorf("view may create sessions: %s", msg)
		}
	})
}

func TestValidatingAdmissionPolicyAppliesToSessions(t *testing.T) {
	ns := namespace(t, "policy")
	kubectl(t, "label", "namespace", ns, "clustergate-policy=short-sessions")
	apply(t, cp.AdminKubeconfig, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: viewer-sessions-are-short}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [clustergate.dev]
      apiVersions: ["*"]
      operations: [CREATE]
      resources: [sessions]
  validations:
  - expression: "object.spec.accessLevel.group != 'viewer' || duration(object.spec.ttl) <= duration('1h')"
    message: "viewer sessions in this namespace last at most one hour"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: viewer-sessions-are-short}
spec:
  policyName: viewer-sessions-are-short
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {clustergate-policy: short-sessions}
`)
	long := strings.Replace(sessionManifest("long", ""), "ttl: 1h", "ttl: 2h", 1)
	// The policy reaches clustergate's informers within seconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(long), "-n", ns, "create", "--dry-run=server", "-f", "-")
		if err != nil {
			if !strings.Contains(err.Error(), "viewer sessions in this namespace last at most one hour") {
				t.Fatalf("refused for another reason: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never refused the session: %s", out)
		}
		time.Sleep(time.Second)
	}
	apply(t, cp.AdminKubeconfig, sessionManifest("short", ""), "-n", ns)
}

func TestShootKubeconfigFromGardener(t *testing.T) {
	req := `{"apiVersion":"authentication.gardener.cloud/v1alpha1","kind":"AdminKubeconfigRequest","spec":{"expirationSeconds":600}}`
	out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(req), "create", "--raw",
		fmt.Sprintf("/apis/core.gardener.cloud/v1beta1/namespaces/garden-%s/shoots/%s/adminkubeconfig", localcluster.Project, localcluster.Shoot), "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Status struct {
			Kubeconfig []byte `json:"kubeconfig"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shoot-admin.kubeconfig")
	if err := os.WriteFile(path, resp.Status.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if who := kubectlAs(t, path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"); !strings.Contains(who, "gardener.cloud:system:admins") {
		t.Errorf("shoot identity groups = %s", who)
	}
	kubectlAs(t, path, "get", "secrets", "-n", "kube-system")
}

func userKubeconfig(t *testing.T, name string, groups ...string) string {
	t.Helper()
	path, err := cp.UserKubeconfig(name, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
