// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// waitReady waits until the API server of kubeconfig answers /readyz.
func (cp *ControlPlane) waitReady(ctx context.Context, kubeconfig string) error {
	return cp.retry(ctx, func() error {
		_, err := cp.Kubectl(ctx, kubeconfig, nil, "get", "--raw", "/readyz")
		return err
	})
}

// waitAPIService waits until the cluster of kubeconfig reports the
// APIService name Available.
func (cp *ControlPlane) waitAPIService(ctx context.Context, kubeconfig, name string) error {
	return cp.retry(ctx, func() error {
		out, err := cp.Kubectl(ctx, kubeconfig, nil, "get", "apiservice", name,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if err != nil {
			return err
		}
		if string(out) != "True" {
			return fmt.Errorf("APIService %s not Available yet", name)
		}
		return nil
	})
}

// waitHTTP waits until url answers 200.
func (cp *ControlPlane) waitHTTP(ctx context.Context, url string, roots *x509.CertPool) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	return cp.retry(ctx, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// retry calls f until it succeeds, a process dies, or two minutes pass.
func (cp *ControlPlane) retry(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		if dead := cp.checkAlive(); dead != nil {
			return errors.Join(dead, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
