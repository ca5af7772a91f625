package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// sessionKubeconfig fetches sessions/kubeconfig as the owner and completes
// its user with the owner's client certificate for the control plane, as
// an exec plugin would.
func sessionKubeconfig(t *testing.T, ownerKubeconfig, ns, name string) string {
	t.Helper()
	raw := kubectlAs(t, ownerKubeconfig, "get", "--raw", fmt.Sprintf("/apis/clustergate.dev/v1alpha1/namespaces/%s/sessions/%s/kubeconfig", ns, name))
	var answer v1alpha1.SessionKubeconfig
	if err := json.Unmarshal([]byte(raw), &answer); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(answer.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		if u.Token != "" || len(u.ClientKeyData) > 0 || u.ClientKey != "" {
			t.Fatalf("sessions/kubeconfig handed out credentials")
		}
	}
	owner, err := clientcmd.LoadFromFile(ownerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ownerUser := owner.AuthInfos[owner.Contexts[owner.CurrentContext].AuthInfo]
	cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo] = &clientcmdapi.AuthInfo{
		ClientCertificateData: ownerUser.ClientCertificateData, ClientKeyData: ownerUser.ClientKeyData,
	}
	path := filepath.Join(t.TempDir(), "session.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// proxySession opens a shoot session owned by alice in a new namespace and
// returns the namespace, alice's garden kubeconfig and her session kubeconfig.
func proxySession(t *testing.T, nsName, session, ttl string) (string, string, string, *v1alpha1.Session) {
	t.Helper()
	_, client := clients(t)
	ns := namespace(t, nsName)
	kubectl(t, "-n", ns, "create", "rolebinding", "alice", "--clusterrole=clustergate:session-user", "--user=alice")
	alice := userKubeconfig(t, "alice", "sre")
	apply(t, alice, strings.Replace(sessionManifest(session, ""), "ttl: 1h", "ttl: "+ttl, 1), "-n", ns)
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
		kubectl(t, "-n", ns, "create", "rolebinding", "bob", "--clusterrole=clustergate:session-user", "--user=bob")
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

func TestProxyEndsOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	_, _, _, s := proxySession(t, "replicas", "both", "30s")
	replica, err := cp.StartReplica(ctx, "clustergate-2")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.StopComponent(replica.Name) }()
	client, err := cp.FrontProxyClient()
	if err != nil {
		t.Fatal(err)
	}

	// One watch on each replica, asked the way the aggregator asks.
	var ends []<-chan time.Time
	for _, base := range []string{cp.ClustergateURL, replica.URL} {
		req, _ := http.NewRequest(http.MethodGet, base+s.Status.Endpoint+"/api/v1/namespaces/default/configmaps?watch=true", nil)
		req.Header.Set("X-Remote-User", "alice")
		req.Header["X-Remote-Group"] = []string{"sre", "system:authenticated"}
		var resp *http.Response
		eventually(t, 20*time.Second, "watch through "+base, func() error {
			var err error
			if resp, err = client.Do(req); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return fmt.Errorf("%s %s", resp.Status, b)
			}
			return nil
		})
		end := make(chan time.Time, 1)
		go func() {
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			end <- time.Now()
		}()
		ends = append(ends, end)
	}
	for i, end := range ends {
		select {
		case at := <-end:
			if late := at.Sub(s.Status.ExpiresAt.Time); late > time.Second || late < -time.Second {
				t.Errorf("replica %d: the watch ended %s after expiresAt, want within 1s", i+1, late)
			}
		case <-time.After(time.Until(s.Status.ExpiresAt.Add(10 * time.Second))):
			t.Fatalf("replica %d: the watch outlived the session", i+1)
		}
	}
}
