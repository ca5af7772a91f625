// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clustergate/clustergate/internal/localcluster"
	monitoring "github.com/clustergate/clustergate/internal/monitoringartifacts"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// compression is how much faster time runs for the e2e Prometheus' rules:
// a 5-minute window is 15 seconds.
const compression = 20

// TestMonitoring scrapes the e2e server with a real Prometheus, as the
// ServiceAccount and with the rules of artifacts/monitoring (durations
// divided by compression), and checks what an operator would rely on.
func TestMonitoring(t *testing.T) {
	ctx := context.Background()
	for _, b := range []string{"prometheus", "promtool"} {
		if _, err := os.Stat(filepath.Join(cp.RepoRoot(), "_output", "bin", b)); err != nil {
			t.Fatalf("%s is missing: run `make test-e2e`, which builds it", b)
		}
	}
	// Objects in every state the metrics report, so that every metric has
	// a series whichever tests ran before: a kubeconfig, a session that
	// never gets Ready, and one that ended.
	_, client := clients(t)
	ns := namespace(t, "monitoring")
	kubectl(t, "-n", ns, "apply", "-f", filepath.Join(cp.RepoRoot(), "artifacts", "examples", "gardenerclusterkubeconfig.yaml"))
	apply(t, cp.AdminKubeconfig, strings.Replace(clusterSessionManifest("stuck", "1h", "viewer"), localcluster.ShootTargetSecret, "no-such-secret", 1), "-n", ns)
	apply(t, cp.AdminKubeconfig, sessionManifest("ended", ""), "-n", ns)
	waitSessionReady(t, client, ns, "ended")
	kubectl(t, "-n", ns, "delete", "session", "ended", "--wait=true")
	waitCondition(t, client, ns, "local", v1alpha1.KubeconfigReasonCreated, time.Minute)
	// An extension waits for an approver from here to the end: the alert
	// for approvers fires on its real waiting time, which the rules'
	// compression does not shorten.
	approvalNS, waitingSince := waitingExtension(t)
	prom, err := cp.StartPrometheus(ctx, localcluster.PrometheusOptions{ScrapeInterval: time.Second, TimeCompression: compression})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Prometheus at %s", prom.URL)

	t.Run("metrics pass promtool check metrics", func(t *testing.T) {
		own, all := scrape(t)
		cmd := exec.Command(filepath.Join(cp.RepoRoot(), "_output", "bin", "promtool"), "check", "metrics")
		cmd.Stdin = bytes.NewReader(own)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on clustergate's own metrics: %v\n%s", err, out)
		}
		// The generic server's and client libraries' metrics are theirs to
		// fix: their findings are only reported.
		cmd = exec.Command(filepath.Join(cp.RepoRoot(), "_output", "bin", "promtool"), "check", "metrics")
		cmd.Stdin = bytes.NewReader(all)
		out, _ := cmd.CombinedOutput()
		t.Logf("promtool check metrics on all of /metrics:\n%s", out)
	})

	t.Run("metrics are those the docs list", func(t *testing.T) {
		docs, err := os.ReadFile(filepath.Join(cp.RepoRoot(), monitoring.DocsFile))
		if err != nil {
			t.Fatal(err)
		}
		documented := monitoring.DocumentedMetrics(string(docs))
		own, _ := scrape(t)
		var served []string
		for _, line := range strings.Split(string(own), "\n") {
			if fields := strings.Fields(line); len(fields) == 4 && fields[1] == "TYPE" {
				served = append(served, fields[2])
			}
		}
		for _, m := range served {
			if !slices.Contains(documented, m) {
				t.Errorf("%s is served but not in the table of %s", m, monitoring.DocsFile)
			}
		}
		for _, m := range documented {
			if !slices.Contains(served, m) {
				t.Errorf("%s is in the table of %s but not served", m, monitoring.DocsFile)
			}
		}
	})

	t.Run("every rule evaluates", func(t *testing.T) {
		rule, err := monitoring.Read(filepath.Join(cp.RepoRoot(), monitoring.RuleFile))
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "every rule evaluated without error", func() error {
			groups, err := prom.Rules(ctx)
			if err != nil {
				return err
			}
			if len(groups) != len(rule.Spec.Groups) {
				return fmt.Errorf("Prometheus loaded %d rule groups, the PrometheusRule has %d", len(groups), len(rule.Spec.Groups))
			}
			var bad []string
			for _, g := range groups {
				for _, r := range g.Rules {
					if r.Health != "ok" || r.LastError != "" {
						bad = append(bad, fmt.Sprintf("%s: health %s, error %q", r.Name, r.Health, r.LastError))
					}
				}
			}
			if len(bad) > 0 {
				return fmt.Errorf("%s", strings.Join(bad, "; "))
			}
			return nil
		})
	})

	t.Run("Gardener down fires ClustergateGardenerUnavailable, back resolves it", func(t *testing.T) {
		const alert = "ClustergateGardenerUnavailable"
		if a := findAlert(t, prom, alert); a != nil {
			t.Fatalf("%s is %s before Gardener stopped", alert, a.State)
		}
		stopped := time.Now()
		if err := cp.StopComponent("gardener-apiserver"); err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted {
				_ = cp.StartComponent(ctx, "gardener-apiserver")
			}
		}()
		var fired *localcluster.Alert
		eventually(t, 3*time.Minute, alert+" firing", func() error {
			if fired = findAlert(t, prom, alert); fired == nil || fired.State != "firing" {
				return fmt.Errorf("alert %+v", fired)
			}
			return nil
		})
		t.Logf("%s fired %s after gardener-apiserver stopped", alert, time.Since(stopped).Round(time.Second))
		if !strings.HasPrefix(fired.Labels["instance"], "127.0.0.1:") || fired.Labels["severity"] != "critical" {
			t.Errorf("alert labels %v", fired.Labels)
		}
		if !strings.Contains(fired.Annotations["summary"], fired.Labels["instance"]) || fired.Annotations["runbook_url"] == "" {
			t.Errorf("alert annotations %v", fired.Annotations)
		}

		restarting := time.Now()
		if err := cp.StartComponent(ctx, "gardener-apiserver"); err != nil {
			t.Fatal(err)
		}
		restarted = true
		back := time.Now()
		eventually(t, 3*time.Minute, alert+" resolved", func() error {
			if a := findAlert(t, prom, alert); a != nil {
				return fmt.Errorf("still %s", a.State)
			}
			return nil
		})
		t.Logf("%s resolved %s after gardener-apiserver was started again, %s after its APIServices were Available",
			alert, time.Since(restarting).Round(time.Second), time.Since(back).Round(time.Second))
	})

	t.Run("an extension waiting for an approver fires ClustergateSessionApprovalPending for its namespace", func(t *testing.T) {
		const alert = "ClustergateSessionApprovalPending"
		// Approvers find it without Prometheus: by field selector and with
		// the plugin.
		listed := kubectl(t, "get", "sessions", "-A", "--field-selector", v1alpha1.FieldPendingApproval+"!=", "-o", "name")
		if strings.TrimSpace(listed) != "session.clustergate.dev/waiting" {
			t.Errorf("sessions with a pending approval: %q", listed)
		}
		mustSession(t, userKubeconfig(t, "bob"), approvalNS, "Extend Pending", "list", "--pending", "-o", "wide")
		var fired *localcluster.Alert
		eventually(t, 4*time.Minute, alert+" firing", func() error {
			if fired = findAlert(t, prom, alert); fired == nil || fired.State != "firing" {
				return fmt.Errorf("alert %+v", fired)
			}
			return nil
		})
		t.Logf("%s fired %s after the extension was asked for", alert, time.Since(waitingSince).Round(time.Second))
		if fired.Labels["session_namespace"] != approvalNS || fired.Labels["request"] != string(v1alpha1.ApprovalExtend) || fired.Labels["severity"] != "info" {
			t.Errorf("alert labels %v", fired.Labels)
		}
		if !strings.Contains(fired.Annotations["description"], "kubectl session list --pending -n "+approvalNS) {
			t.Errorf("alert annotations %v", fired.Annotations)
		}
	})

	// Last, with the history the Gardener outage left.
	t.Run("every dashboard query runs", func(t *testing.T) {
		queries, err := monitoring.DashboardQueries(filepath.Join(cp.RepoRoot(), monitoring.DashboardFile))
		if err != nil {
			t.Fatal(err)
		}
		var empty []string
		for _, q := range queries {
			q = strings.NewReplacer("$job", "clustergate", "$__rate_interval", "1m").Replace(q)
			samples, err := prom.Query(ctx, q)
			if err != nil {
				t.Error(err)
			}
			if len(samples) == 0 {
				empty = append(empty, q)
			}
		}
		t.Logf("%d dashboard queries, %d without data here: %s", len(queries), len(empty), strings.Join(empty, "; "))
	})
}

// waitingExtension leaves a breakglass session whose owner, alice, asked
// to extend it, waiting for an approver, and returns its namespace and when
// she asked. The extension, unlike an opening request, waits until the
// session expires, an hour later.
func waitingExtension(t *testing.T) (string, time.Time) {
	t.Helper()
	ns := namespace(t, "approvers")
	grantBreakglass(t, ns, "alice", "bob")
	aliceKubeconfig := userKubeconfig(t, "alice", "sre")
	alice, bob := clientOf(t, aliceKubeconfig), clientOf(t, userKubeconfig(t, "bob"))
	apply(t, aliceKubeconfig, clusterSessionManifest("waiting", "1h", approvalGroup), "-n", ns)
	eventually(t, 30*time.Second, "the session waits for its approver", func() error {
		_, err := decide(bob, ns, "waiting", v1alpha1.ApprovalApproved, "INC-9")
		return err
	})
	s := waitSessionReady(t, alice, ns, "waiting")
	extended, err := extendTo(alice, ns, s.Name, s.Status.ExpiresAt.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if a := extended.Status.PendingApproval(); a == nil || a.Type != v1alpha1.ApprovalExtend {
		t.Fatalf("after the extension the approvals are %+v, want an Extend pending", extended.Status.Approvals)
	}
	return ns, time.Now()
}

// scrape returns clustergate's /metrics as Prometheus reads it: the
// families of clustergate's own metrics, and all.
func scrape(t *testing.T) (own, all []byte) {
	t.Helper()
	all, err := cp.ClustergateMetrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(all), "\n") {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if strings.HasPrefix(name, "clustergate_") {
			b.WriteString(line)
		}
	}
	return b.Bytes(), all
}

// findAlert returns the pending or firing alert of that name, or nil.
func findAlert(t *testing.T, prom *localcluster.Prometheus, name string) *localcluster.Alert {
	t.Helper()
	alerts, err := prom.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if a.Labels["alertname"] == name {
			return &a
		}
	}
	return nil
}
