package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// sessionKubeconfig writes the session's kubeconfig, completed with the
// owner's client certificate, and returns its path.
func sessionKubeconfig(t *testing.T, ownerKubeconfig, ns, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "session.kubeconfig")
	if err := cp.SessionKubeconfig(context.Background(), ownerKubeconfig, ns, name, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// proxySession opens a viewer session of the shoot owned by alice in a new
// namespace and returns the namespace, alice's garden kubeconfig and her
// session kubeconfig.
func proxySession(t *testing.T, nsName, session, ttl string) (string, string, string, *v1alpha1.Session) {
	t.Helper()
	return proxySessionWith(t, nsName, session, ttl, "viewer")
}

// proxySessionWith is proxySession with the given access group.
func proxySessionWith(t *testing.T, nsName, session, ttl, group string) (string, string, string, *v1alpha1.Session) {
	t.Helper()
	_, client := clients(t)
	ns := namespace(t, nsName)
	target := "clustergate:target-viewer"
	if group == "admin" {
		target = "clustergate:target-admin"
	}
	grant(t, ns, "alice", "clustergate:session-user", target)
	alice := userKubeconfig(t, "alice", "sre")
	manifest := strings.Replace(sessionManifest(session, ""), "ttl: 1h", "ttl: "+ttl, 1)
	apply(t, alice, strings.Replace(manifest, "group: viewer", "group: "+group, 1), "-n", ns)
	s := waitSessionReady(t, client, ns, session)
	return ns, alice, sessionKubeconfig(t, alice, ns, session), s
}

// restConfig returns a client configuration of a kubeconfig file.
func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestProxy(t *testing.T) {
	ns, alice, session, s := proxySession(t, "proxy", "work", "1h")

	t.Run("the owner reaches the target", func(t *testing.T) {
		out := kubectlAs(t, session, "get", "namespaces", "-o", "name")
		if !strings.Contains(out, "namespace/kube-system") {
			t.Errorf("namespaces through the session: %s", out)
		}
		who := kubectlAs(t, session, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if !strings.HasPrefix(who, "gardener.cloud:viewer:") {
			t.Errorf("the target sees %q, want the session's Gardener viewer identity", who)
		}
	})

	t.Run("watch through the session receives target events", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		printed := make(chan string, 1)
		go func() {
			out, _ := cp.Kubectl(ctx, session, nil, "-n", "default", "get", "configmaps", "-w", "--output-watch-events", "--no-headers")
			printed <- string(out)
		}()
		time.Sleep(2 * time.Second)
		kubectlAs(t, cp.ShootKubeconfig, "-n", "default", "create", "configmap", "made-on-target")
		time.Sleep(2 * time.Second)
		cancel()
		if out := <-printed; !strings.Contains(out, "made-on-target") {
			t.Errorf("watch printed %q", out)
		}
	})

	t.Run("WebSocket watch streams through both hops", func(t *testing.T) {
		conn := websocketWatch(t, session)
		defer conn.Close()
		kubectlAs(t, cp.ShootKubeconfig, "-n", "default", "create", "configmap", "over-websocket")
		deadline := time.Now().Add(20 * time.Second)
		_ = conn.SetReadDeadline(deadline)
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("no frame with the new ConfigMap: %v", err)
			}
			// Without a subprotocol every frame is one JSON watch event.
			if strings.Contains(string(msg), "over-websocket") {
				return
			}
		}
	})

	t.Run("spoofed identity headers do not reach the target", func(t *testing.T) {
		cfg := restConfig(t, session)
		transport, err := rest.TransportFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
		req, _ := http.NewRequest(http.MethodPost, cfg.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		// Impersonate-* headers are judged by the control plane's
		// kube-apiserver (alice may not impersonate); X-Remote-* claims are
		// ignored there and stripped by the proxy.
		for _, h := range []string{"X-Remote-User", "X-Remote-Group", "X-Remote-Extra-Scopes"} {
			req.Header.Set(h, "system:admin")
		}
		resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || !strings.Contains(string(out), "gardener.cloud:viewer:") || strings.Contains(string(out), "system:admin") {
			t.Errorf("%s %s", resp.Status, out)
		}
	})

	t.Run("others are refused", func(t *testing.T) {
		grant(t, ns, "bob", "clustergate:session-user")
		bob := userKubeconfig(t, "bob")
		proxyPath := fmt.Sprintf("/apis/clustergate.dev/v1alpha1/namespaces/%s/sessions/work/proxy/api/v1/namespaces", ns)
		msg := kubectlErr(t, bob, "", "get", "--raw", proxyPath)
		if !strings.Contains(msg, "only the session's owner may use its proxy") {
			t.Errorf("bob with RBAC: %s", msg)
		}
		msg = kubectlErr(t, userKubeconfig(t, "mallory"), "", "get", "--raw", proxyPath)
		if !strings.Contains(msg, "forbidden") && !strings.Contains(msg, "Forbidden") {
			t.Errorf("mallory without RBAC: %s", msg)
		}
		kubectlAs(t, alice, "get", "--raw", proxyPath)
	})

	t.Run("deleting the session ends its streams at once", func(t *testing.T) {
		ended := watchUntilEnd(t, session)
		start := time.Now()
		kubectlAs(t, alice, "-n", ns, "delete", "session", s.Name, "--wait=false")
		select {
		case last := <-ended:
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the watch ended %s after the delete", took)
			}
			if !strings.Contains(last, "deleted") {
				t.Errorf("last line of the watch %q does not say the session was deleted", last)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the watch outlived the deleted session")
		}
	})
}

func TestProxyEndsAtExpiry(t *testing.T) {
	_, _, session, s := proxySession(t, "proxy-expiry", "brief", "15s")
	ended := watchUntilEnd(t, session)
	select {
	case last := <-ended:
		late := time.Since(s.Status.ExpiresAt.Time)
		if late > time.Second || late < -time.Second {
			t.Errorf("the watch ended %s after expiresAt, want within 1s", late)
		}
		if !strings.Contains(last, "expired") {
			t.Errorf("last line of the watch %q does not say the session expired", last)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch outlived the session")
	}
	// Once expired, the proxy answers 410 or 404.
	msg := kubectlErr(t, session, "", "get", "namespaces")
	if !strings.Contains(msg, "expired") && !strings.Contains(msg, "NotFound") && !strings.Contains(msg, "not found") {
		t.Errorf("after expiry: %s", msg)
	}
}

func TestProxyClientDisconnectClosesUpstream(t *testing.T) {
	_, _, session, _ := proxySession(t, "proxy-disconnect", "short-lived-client", "1h")
	before := shootWatches(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cp.Kubectl(ctx, session, nil, "-n", "default", "get", "configmaps", "-w")
	}()
	eventually(t, 20*time.Second, "watch open on the target", func() error {
		if n := shootWatches(t); n <= before {
			return fmt.Errorf("%d watches", n)
		}
		return nil
	})
	cancel()
	<-done
	eventually(t, 20*time.Second, "upstream watch closed", func() error {
		if n := shootWatches(t); n > before {
			return fmt.Errorf("%d watches still open (%d before)", n, before)
		}
		return nil
	})
}

// watchUntilEnd starts a raw watch through the session and returns a
// channel that receives the watch's last line when the stream ends.
func watchUntilEnd(t *testing.T, session string) <-chan string {
	t.Helper()
	cfg := restConfig(t, session)
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch: %s %s", resp.Status, b)
	}
	ended := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		last := ""
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			last = lines.Text()
		}
		ended <- last
	}()
	return ended
}

// shootWatches is the number of WATCH requests the shoot kube-apiserver is
// serving.
func shootWatches(t *testing.T) int {
	t.Helper()
	metrics := kubectlAs(t, cp.ShootKubeconfig, "get", "--raw", "/metrics")
	total := 0
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `verb="WATCH"`) {
			var v float64
			fields := strings.Fields(line)
			fmt.Sscan(fields[len(fields)-1], &v)
			total += int(v)
		}
	}
	return total
}

// websocketWatch opens a WebSocket watch of ConfigMaps in the target's
// default namespace through the session.
func websocketWatch(t *testing.T, session string) *websocket.Conn {
	t.Helper()
	cfg := restConfig(t, session)
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(cfg.Host, "https://", "wss://", 1) + "/api/v1/namespaces/default/configmaps?watch=1"
	dialer := websocket.Dialer{TLSClientConfig: tlsConfig, HandshakeTimeout: 10 * time.Second}
	// The target's websocket handshake wants an Origin.
	conn, resp, err := dialer.Dial(url, http.Header{"Origin": {"http://localhost"}})
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = resp.Status + " " + string(b)
		}
		t.Fatalf("websocket: %v %s", err, body)
	}
	return conn
}

// openProxied is clustergate_proxy_open_requests of the replica at url.
func openProxied(t *testing.T, url string) int {
	t.Helper()
	client, err := rest.HTTPClientFor(cp.FrontProxyConfig(url, "admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if f := strings.Fields(lines.Text()); len(f) == 2 && f[0] == "clustergate_proxy_open_requests" {
			n, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatalf("%s/metrics has no clustergate_proxy_open_requests (%s)", url, resp.Status)
	return 0
}

// watchOnEveryReplica opens WebSocket watches through the session (the
// whole aggregated path) until each replica holds at least one, and returns
// channels that receive the moment each watch ended.
func watchOnEveryReplica(t *testing.T, session string, replicas []string) []<-chan time.Time {
	t.Helper()
	before := make([]int, len(replicas))
	for i, url := range replicas {
		before[i] = openProxied(t, url)
	}
	var ends []<-chan time.Time
	for range 10 {
		conn := websocketWatch(t, session)
		end := make(chan time.Time, 1)
		go func() {
			defer conn.Close()
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					end <- time.Now()
					return
				}
			}
		}()
		ends = append(ends, end)
		// The replica counted the stream before it answered the upgrade.
		everywhere := true
		for i, url := range replicas {
			everywhere = everywhere && openProxied(t, url) > before[i]
		}
		if everywhere {
			t.Logf("%d WebSocket watches through the APIService reached both replicas", len(ends))
			return ends
		}
	}
	t.Fatalf("%d watches through the APIService, and a replica holds none", len(ends))
	return nil
}

// TestProxyEndsOnEveryReplica runs two replicas behind the APIService. The
// aggregator dials a connection of its own for each upgraded request, which
// the Service's balancer hands to the replicas in turn, so WebSocket
// watches through the whole path land on both.
func TestProxyEndsOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	replica, err := cp.StartReplica(ctx, "clustergate-2")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	deletedNS, _, deleted, _ := proxySession(t, "replicas-deleted", "deleted", "1h")
	// Last, so that its TTL need only cover opening the watches.
	_, _, expiring, s := proxySession(t, "replicas", "expiring", "20s")
	replicas := []string{cp.ClustergateURL, replica.URL}
	expiringEnds := watchOnEveryReplica(t, expiring, replicas)
	deletedEnds := watchOnEveryReplica(t, deleted, replicas)

	_, client := clients(t)
	deletedAt := time.Now()
	if err := client.ClustergateV1alpha1().Sessions(deletedNS).Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, end := range deletedEnds {
		select {
		case at := <-end:
			took := at.Sub(deletedAt)
			t.Logf("watch %d of the deleted session ended %s after the delete", i+1, took)
			if took > time.Second {
				t.Errorf("watch %d of the deleted session ended %s after the delete, want within 1s", i+1, took)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch %d of the deleted session is still open", i+1)
		}
	}
	for i, end := range expiringEnds {
		select {
		case at := <-end:
			late := at.Sub(s.Status.ExpiresAt.Time)
			t.Logf("watch %d of the expiring session ended %s after expiresAt", i+1, late)
			if late > time.Second || late < -time.Second {
				t.Errorf("watch %d ended %s after expiresAt, want within 1s", i+1, late)
			}
		case <-time.After(time.Until(s.Status.ExpiresAt.Add(10 * time.Second))):
			t.Fatalf("watch %d outlived the session", i+1)
		}
	}
}

// standInPod creates a pod in the shoot's default namespace, bound to the
// stand-in node that serves its exec and port-forward.
func standInPod(t *testing.T, name string) {
	t.Helper()
	apply(t, cp.ShootKubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  containers: [{name: main, image: stand-in}]
`, name, localcluster.NodeName))
	// The node runs it, as far as kubectl port-forward can tell.
	kubectlAs(t, cp.ShootKubeconfig, "-n", "default", "patch", "pod", name, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Running"}}`)
}

// TestProxyExecAndPortForward runs kubectl exec and port-forward as the
// owner through the whole path: kube-apiserver, clustergate, the shoot's
// kube-apiserver and its node.
func TestProxyExecAndPortForward(t *testing.T) {
	_, _, session, _ := proxySessionWith(t, "proxy-exec", "exec", "1h", "admin")
	standInPod(t, "exec")

	t.Run("exec runs a command", func(t *testing.T) {
		if out := kubectlAs(t, session, "-n", "default", "exec", "exec", "--", "echo", "hello", "through", "the", "session"); out != "hello through the session\n" {
			t.Errorf("exec printed %q", out)
		}
	})
	t.Run("exec streams stdin", func(t *testing.T) {
		out, err := cp.Kubectl(context.Background(), session, []byte("ping\npong\n"), "-n", "default", "exec", "-i", "exec", "--", "cat")
		if err != nil || string(out) != "ping\npong\n" {
			t.Errorf("exec -i cat: %q %v", out, err)
		}
	})
	t.Run("a failing command reports its exit code", func(t *testing.T) {
		if msg := kubectlErr(t, session, "", "-n", "default", "exec", "exec", "--", "rm", "-rf", "/"); !strings.Contains(msg, "exit code 127") {
			t.Errorf("exec of an unknown command: %s", msg)
		}
	})
	t.Run("port-forward carries a connection", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", session, "-n", "default", "port-forward", "pod/exec", ":8080")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		// "Forwarding from 127.0.0.1:PORT -> 8080"
		lines := bufio.NewScanner(stdout)
		var local string
		for lines.Scan() {
			if _, err := fmt.Sscanf(lines.Text(), "Forwarding from 127.0.0.1:%s -> 8080", &local); err == nil {
				break
			}
		}
		if local == "" {
			t.Fatalf("kubectl port-forward did not start: %v %s", lines.Err(), stderr.String())
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		conn, err := net.Dial("tcp", "127.0.0.1:"+local)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprint(conn, "over the forwarded port\n")
		if echo, err := bufio.NewReader(conn).ReadString('\n'); err != nil || echo != "over the forwarded port\n" {
			t.Errorf("echo through the forwarded port: %q %v", echo, err)
		}
	})
}

// TestProxyExecEndsAtExpiry keeps an interactive exec open until its
// session expires.
func TestProxyExecEndsAtExpiry(t *testing.T) {
	_, _, session, s := proxySessionWith(t, "proxy-exec-expiry", "brief-exec", "15s", "admin")
	standInPod(t, "exec-expiry")
	stdin, hold := io.Pipe()
	cmd := exec.Command("kubectl", "--kubeconfig", session, "-n", "default", "exec", "-i", "exec-expiry", "--", "cat")
	cmd.Stdin = stdin
	out := &stampedWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait returns once the copy of stdin ends, too.
	defer func() { _ = hold.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fmt.Fprintln(hold, "still here")
	// kubectl reports the stream's end at once, and exits once its stdin
	// ends too.
	eventually(t, time.Until(s.Status.ExpiresAt.Add(15*time.Second)), "kubectl exec reports the end of the stream", func() error {
		if !strings.Contains(out.String(), "error") {
			return fmt.Errorf("output so far %q", out.String())
		}
		return nil
	})
	late := out.when("error").Sub(s.Status.ExpiresAt.Time)
	t.Logf("kubectl exec reported the end of its stream %s after expiresAt: %q", late, out.String())
	if late < -time.Second || late > time.Second {
		t.Errorf("the exec stream ended %s after expiresAt, want within 1s", late)
	}
	if !strings.HasPrefix(out.String(), "still here\n") {
		t.Errorf("the stream did not carry data before: %q", out.String())
	}
	// The WebSocket stream ends with a close frame saying why.
	if !strings.Contains(out.String(), "proxy-exec-expiry/brief-exec: the session expired") {
		t.Errorf("kubectl does not say the session expired: %q", out.String())
	}
}

// stampedWriter keeps what is written and when each write came.
type stampedWriter struct {
	mu     sync.Mutex
	text   strings.Builder
	writes []stampedWrite
}

type stampedWrite struct {
	at   time.Time
	text string
}

func (w *stampedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, stampedWrite{time.Now(), string(b)})
	return w.text.Write(b)
}

func (w *stampedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}

// when is the time of the first write containing s.
func (w *stampedWriter) when(s string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, write := range w.writes {
		if strings.Contains(write.text, s) {
			return write.at
		}
	}
	return time.Time{}
}

// TestProxyOwnerUID: when the owner's authenticator reports a UID, the proxy
// wants it too: a user of the owner's name with another UID (one deleted and
// created again, say) is not the owner.
func TestProxyOwnerUID(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "proxy-uid")
	grant(t, ns, "uma", "clustergate:session-user", "clustergate:target-viewer")
	// Straight to clustergate, authenticated as the aggregator does it.
	as := func(uid string) *rest.Config {
		return cp.FrontProxyConfigWithUID(cp.ClustergateURL, "uma", uid, "system:authenticated")
	}
	client, err := versioned.NewForConfig(as("uid-1"))
	if err != nil {
		t.Fatal(err)
	}
	created, err := client.ClustergateV1alpha1().Sessions(ns).Create(ctx, &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: "umas"},
		Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
			Target: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: localcluster.Shoot}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Owner.Username != "uma" || created.Spec.Owner.UID != "uid-1" {
		t.Fatalf("owner = %+v, want uma with UID uid-1", created.Spec.Owner)
	}
	_, admin := clients(t)
	s := waitSessionReady(t, admin, ns, "umas")
	for _, tt := range []struct {
		uid  string
		want int
	}{{"uid-1", http.StatusOK}, {"uid-2", http.StatusForbidden}, {"", http.StatusForbidden}} {
		t.Run("uid "+tt.uid, func(t *testing.T) {
			hc, err := rest.HTTPClientFor(as(tt.uid))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Get(cp.ClustergateURL + s.Status.Endpoint + "/api")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want {
				t.Errorf("got %s %s, want %d", resp.Status, body, tt.want)
			}
			if tt.want == http.StatusForbidden && !strings.Contains(string(body), "only the session's owner may use its proxy") {
				t.Errorf("the refusal does not say why: %s", body)
			}
		})
	}
}

// TestProxyCallerAddressesDoNotReachTheTarget reads the shoot's audit log:
// the source addresses of a proxied request are those the control plane
// saw, never those the caller wrote into forwarding headers.
func TestProxyCallerAddressesDoNotReachTheTarget(t *testing.T) {
	_, _, session, _ := proxySession(t, "proxy-addresses", "addresses", "1h")
	cfg := restConfig(t, session)
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/api/v1/namespaces/default/configmaps/"+probe, nil)
	for h, v := range map[string]string{
		"X-Forwarded-For": "203.0.113.1", "X-Real-Ip": "203.0.113.2", "Forwarded": "for=203.0.113.3",
		"X-Forwarded-Host": "evil.example.com", "Cookie": "session=203.0.113.4",
	} {
		req.Header.Set(h, v)
	}
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The target answered: no such ConfigMap.
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("got %s, want the target's 404", resp.Status)
	}
	var event struct {
		RequestURI string   `json:"requestURI"`
		SourceIPs  []string `json:"sourceIPs"`
		User       struct {
			Username string `json:"username"`
		} `json:"user"`
	}
	eventually(t, 10*time.Second, "the probe in the shoot's audit log", func() error {
		log, err := os.ReadFile(cp.ShootAuditLog)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, probe) {
				return json.Unmarshal([]byte(line), &event)
			}
		}
		return fmt.Errorf("not there")
	})
	if !strings.HasPrefix(event.User.Username, "gardener.cloud:viewer:") {
		t.Errorf("the target saw %q, want the session's identity", event.User.Username)
	}
	t.Logf("the target's audit: user %s, source addresses %v", event.User.Username, event.SourceIPs)
	if len(event.SourceIPs) == 0 {
		t.Error("no source addresses")
	}
	for _, ip := range event.SourceIPs {
		if strings.HasPrefix(ip, "203.0.113.") {
			t.Errorf("the target's audit shows the caller's forged address %s: %v", ip, event.SourceIPs)
		}
	}
}

// TestProxyFollowIsLongRunning: a log request through the proxy is
// long-running for every spelling of a true follow that the target's
// kube-apiserver accepts, so the request timeout does not cut the stream.
// The shoot's stand-in node serves no logs; clustergate's log tells how it
// classified each request.
func TestProxyFollowIsLongRunning(t *testing.T) {
	_, _, session, _ := proxySession(t, "proxy-follow", "follow", "1h")
	cfg := restConfig(t, session)
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := time.Now().UnixNano()
	tests := []struct {
		follow string
		want   bool
	}{{"true", true}, {"TRUE", true}, {"1", true}, {"yes", true}, {"false", false}, {"0", false}}
	for i, tt := range tests {
		t.Run("follow="+tt.follow, func(t *testing.T) {
			path := fmt.Sprintf("/api/v1/namespaces/default/pods/follow-%d-%d/log", run, i)
			resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Get(cfg.Host + path + "?follow=" + tt.follow)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := fmt.Sprintf("longRunning=%v", tt.want)
			eventually(t, 10*time.Second, "the request in clustergate's log", func() error {
				logs, err := filepath.Glob(filepath.Join(cp.LogDir(), "clustergate*.log"))
				if err != nil {
					return err
				}
				for _, name := range logs {
					log, err := os.ReadFile(name)
					if err != nil {
						return err
					}
					for _, line := range strings.Split(string(log), "\n") {
						if strings.Contains(line, "Proxied request opened") && strings.Contains(line, `path="`+path+`"`) {
							if !strings.Contains(line, want) {
								return fmt.Errorf("classified otherwise: %s", line)
							}
							return nil
						}
					}
				}
				return fmt.Errorf("not logged yet")
			})
		})
	}
}
