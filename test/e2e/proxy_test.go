// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	t.Parallel()
	ns, alice, session, s := proxySession(t, "proxy", "work", "1h")

	t.Run("the owner reaches the target", func(t *testing.T) {
		out := kubectlAs(t, session, "get", "namespaces", "-o", "name")
		if !strings.Contains(out, "namespace/kube-system") {
			t.Errorf("namespaces through the session: %s", out)
		}
		who := kubectlAs(t, session, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if who != "clustergate:session:alice" {
			t.Errorf("the target sees %q, want the owner's session identity", who)
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
		if resp.StatusCode != http.StatusCreated || !strings.Contains(string(out), `"clustergate:session:alice"`) || strings.Contains(string(out), "system:admin") {
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
		kubectlAs(t, alice, "-n", ns, "delete", "session", s.Name, "--wait=false")
		// Counted from the delete's answer, not kubectl's start, which on a
		// loaded machine alone takes seconds.
		deleted := time.Now()
		select {
		case last := <-ended:
			if took := time.Since(deleted); took > 2*time.Second {
				t.Errorf("the watch ended %s after the delete was answered", took)
			}
			if !strings.Contains(last, "deleted") {
				t.Errorf("last line of the watch %q does not say the session was deleted", last)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the watch outlived the deleted session")
		}
	})
}

// TestProxyOwnerUID: when the owner's authenticator reports a UID, the proxy
// wants it too: a user of the owner's name with another UID (one deleted and
// created again, say) is not the owner.
func TestProxyOwnerUID(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	event := shootAuditEvent(t, probe)
	if event.User.Username != "clustergate:session:alice" {
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
	t.Parallel()
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
						if strings.Contains(line, "Proxied request closed") && strings.Contains(line, `path="`+path+`"`) {
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
