// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	monitoring "github.com/clustergate/clustergate/internal/monitoringartifacts"
)

// MetricsReader is the ServiceAccount of artifacts/monitoring that may read
// clustergate's /metrics, as whom Prometheus scrapes.
const MetricsReader = "clustergate-metrics-reader"

// PrometheusOptions configure the control plane's Prometheus.
type PrometheusOptions struct {
	// ScrapeInterval is how often clustergate is scraped and the rules are
	// evaluated.
	ScrapeInterval time.Duration
	// TimeCompression divides every duration of the rules (`for`, ranges)
	// by itself, so that alerts fire in seconds instead of minutes; 0 or 1
	// runs them as shipped.
	TimeCompression int
}

// Prometheus is the control plane's Prometheus server.
type Prometheus struct {
	// URL is its HTTP API and /alerts.
	URL    string
	client *http.Client
}

// StartPrometheus starts a Prometheus server, built from the Prometheus Go
// module, that scrapes clustergate as the ServiceAccount MetricsReader of
// artifacts/monitoring, with a token from the garden, and evaluates the
// groups of artifacts/monitoring's PrometheusRule. It returns once the
// first scrape succeeded.
func (cp *ControlPlane) StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	dir := filepath.Join(cp.opts.Dir, "prometheus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "-f",
		filepath.Join(cp.opts.RepoRoot, "artifacts", "monitoring", "metrics-reader.yaml")); err != nil {
		return nil, err
	}
	// The garden runs no token controller to fill the reader's token
	// Secret: a token from the TokenRequest API is the same identity.
	token, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "-n", ServerNamespace, "create", "token", MetricsReader,
		"--duration="+validity.String())
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, token, 0o600); err != nil {
		return nil, err
	}

	rule, err := monitoring.Read(filepath.Join(cp.opts.RepoRoot, monitoring.RuleFile))
	if err != nil {
		return nil, err
	}
	if opts.TimeCompression > 1 {
		if rule, err = rule.Compressed(opts.TimeCompression); err != nil {
			return nil, err
		}
	}
	if err := rule.WriteRulesFile(filepath.Join(dir, "rules.yaml")); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	interval := opts.ScrapeInterval.String()
	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
rule_files: [rules.yaml]
scrape_configs:
- job_name: clustergate
  scheme: https
  authorization: {credentials_file: %[2]q}
  tls_config: {ca_file: %[3]q, server_name: clustergate.clustergate-system.svc}
  static_configs:
  - targets: ["127.0.0.1:%[4]d"]
    labels: {namespace: clustergate-system}
`, interval, tokenFile, cp.certs.aggregatedCA.CertFile, cp.ports.clustergate)
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		return nil, err
	}
	if err := cp.start("prometheus", "prometheus", "--config.file="+configFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+fmt.Sprintf("127.0.0.1:%d", port),
		"--log.level=warn"); err != nil {
		return nil, err
	}
	p := &Prometheus{URL: fmt.Sprintf("http://127.0.0.1:%d", port), client: &http.Client{Timeout: 10 * time.Second}}
	err = cp.retry(ctx, func() error {
		up, err := p.Query(ctx, `up{job="clustergate"}`)
		if err != nil {
			return err
		}
		if len(up) != 1 || up[0].Value != 1 {
			return fmt.Errorf("clustergate not scraped yet: %v", up)
		}
		return nil
	})
	return p, err
}

// Sample is a sample of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates an instant query now.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	var result struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query?query="+url.QueryEscape(query), &result); err != nil {
		return nil, fmt.Errorf("query %s: %w", query, err)
	}
	if result.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: a %s, not a vector", query, result.ResultType)
	}
	samples := make([]Sample, 0, len(result.Result))
	for _, r := range result.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %w", query, r.Value[1], err)
		}
		samples = append(samples, Sample{Labels: r.Metric, Value: v})
	}
	return samples, nil
}

// Alert is an alert Prometheus holds, pending or firing.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// Alerts returns the alerts pending or firing now.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var result struct {
		Alerts []Alert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", &result)
	return result.Alerts, err
}

// RuleGroup is a rule group as Prometheus evaluates it.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []struct {
		Name      string `json:"name"`
		Health    string `json:"health"`
		LastError string `json:"lastError"`
	} `json:"rules"`
}

// Rules returns the rule groups Prometheus loaded, with each rule's health.
func (p *Prometheus) Rules(ctx context.Context) ([]RuleGroup, error) {
	var result struct {
		Groups []RuleGroup `json:"groups"`
	}
	err := p.get(ctx, "/api/v1/rules", &result)
	return result.Groups, err
}

// get reads an answer of Prometheus' HTTP API into data.
func (p *Prometheus) get(ctx context.Context, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s: %s", path, answer.Error)
	}
	return json.Unmarshal(answer.Data, data)
}

// ClustergateMetrics returns clustergate's /metrics, read as MetricsReader
// the way Prometheus reads it; StartPrometheus must have run.
func (cp *ControlPlane) ClustergateMetrics(ctx context.Context) ([]byte, error) {
	token, err := os.ReadFile(filepath.Join(cp.opts.Dir, "prometheus", "token"))
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: cp.certs.aggregatedCA.Pool(), ServerName: "clustergate.clustergate-system.svc"}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.ClustergateURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	return body, nil
}
