// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// gardenerGroupVersions are the API group versions gardener-apiserver serves.
var gardenerGroupVersions = []struct{ Group, Version string }{
	{"core.gardener.cloud", "v1beta1"},
	{"core.gardener.cloud", "v1"},
	{"seedmanagement.gardener.cloud", "v1alpha1"},
	{"operations.gardener.cloud", "v1alpha1"},
	{"security.gardener.cloud", "v1alpha1"},
}

// startGardener starts gardener-apiserver on the garden etcd, registers its
// APIServices, creates the Project and the Shoot, whose advertised address is
// the shoot kube-apiserver, and lets clustergate ask for its kubeconfigs.
func (cp *ControlPlane) startGardener(ctx context.Context) error {
	serving := cp.certs.gardenerServing
	bind := "127.0.0.1"
	if cp.opts.Installed {
		// Endpoints refuse loopback addresses: listen on the process
		// node's gateway, which the aggregator reaches (nodes.go).
		gw, err := cp.processNodeGateway()
		if err != nil {
			return err
		}
		bind, cp.values.GardenerAddress = gw, gw
	}
	if err := cp.start("gardener-apiserver", "gardener-apiserver",
		"--bind-address="+bind, "--secure-port="+strconv.Itoa(cp.ports.gardener),
		"--etcd-servers="+fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcd),
		"--tls-cert-file="+serving.CertFile, "--tls-private-key-file="+serving.KeyFile,
		"--cluster-identity=clustergate-local",
		"--kubeconfig="+cp.gardenerHome(),
		"--authentication-kubeconfig="+cp.gardenerHome(),
		"--authorization-kubeconfig="+cp.gardenerHome(),
		"--enable-priority-and-fairness=false",
	); err != nil {
		return err
	}
	cp.values.GardenerPort = cp.ports.gardener
	cp.values.GardenerGroupVersions = gardenerGroupVersions
	cp.values.AggregatedCABundle = base64.StdEncoding.EncodeToString(cp.certs.aggregatedCA.CertPEM())
	cp.values.Project, cp.values.Shoot = Project, Shoot
	if err := cp.applyFixture(ctx, cp.gardenerHome(), "gardener-apiservices.yaml"); err != nil {
		return err
	}
	for _, gv := range gardenerGroupVersions {
		if err := cp.waitAPIService(ctx, cp.gardenerHome(), gv.Version+"."+gv.Group); err != nil {
			return err
		}
	}
	if cp.gardenShootURL = cp.ShootURL; cp.opts.Installed {
		var err error
		if cp.gardenShootURL, err = cp.forwardShoot(); err != nil {
			return err
		}
	}
	return cp.AddShoot(ctx, Project, Shoot)
}

// AddShoot creates, in Gardener, the Project project (namespace
// garden-<project>) if it is not there and in it the workerless Shoot
// shoot, whose advertised address is the stand-in shoot kube-apiserver, as
// the control plane's own Shoot is: Shoots of several projects are one
// cluster here, told apart by Gardener alone. clustergate's identity may
// request the project's Shoots' kubeconfigs (artifacts/gardener/role.yaml).
// Applying again changes nothing.
func (cp *ControlPlane) AddShoot(ctx context.Context, project, shoot string) error {
	v := cp.values
	v.Project, v.Shoot = project, shoot
	// Admission in gardener-apiserver reads Projects from its own cache, so a
	// Shoot may be refused until it has seen the Project: applying again is
	// harmless.
	if err := cp.retry(ctx, func() error { return cp.applyFixtureWith(ctx, cp.gardenerHome(), "gardener.yaml", v) }); err != nil {
		return err
	}
	status := fmt.Sprintf(`{"status":{"advertisedAddresses":[{"name":"external","url":%q}]}}`, cp.gardenShootURL)
	if _, err := cp.Kubectl(ctx, cp.gardenerHome(), nil, "-n", "garden-"+project, "patch", "shoot", shoot,
		"--subresource=status", "--type=merge", "-p", status); err != nil {
		return err
	}
	_, err := cp.Kubectl(ctx, cp.gardenerHome(), nil, "-n", "garden-"+project, "apply", "-f",
		filepath.Join(cp.opts.RepoRoot, "artifacts", "gardener", "role.yaml"))
	return err
}

// forwardShoot relays the shoot kube-apiserver's port on the process
// node's gateway, which the installed server's pods reach (127.0.0.1 is
// their own), and returns the shoot's URL there: Gardener's kubeconfigs
// name it, so sessions of the Shoot reach it from the pods, and so does the
// host. Stop closes it.
func (cp *ControlPlane) forwardShoot() (string, error) {
	gw, err := cp.processNodeGateway()
	if err != nil {
		return "", err
	}
	address := net.JoinHostPort(gw, strconv.Itoa(cp.ports.shoot))
	if cp.shootForward, err = newBalancer(address); err != nil {
		return "", err
	}
	cp.shootForward.add(strings.TrimPrefix(cp.ShootURL, "https://"))
	return "https://" + address, nil
}

// GardenerMetrics returns gardener-apiserver's /metrics, read directly as
// the garden admin.
func (cp *ControlPlane) GardenerMetrics(ctx context.Context) ([]byte, error) {
	host := "127.0.0.1"
	if cp.values.GardenerAddress != "" {
		// The installed way: on the process node's gateway, whose address
		// its certificate does not name; the Service's name it does.
		host = cp.values.GardenerAddress
	}
	return cp.Kubectl(ctx, cp.gardenerHome(), nil, "--server", fmt.Sprintf("https://%s:%d", host, cp.ports.gardener),
		"--certificate-authority", cp.certs.aggregatedCA.CertFile, "--tls-server-name", "gardener-apiserver.kube-system.svc",
		"get", "--raw", "/metrics")
}

// GardenerKubeconfigRequests counts the shoots/adminkubeconfig requests
// gardener-apiserver has served: one per kubeconfig clustergate fetched.
func (cp *ControlPlane) GardenerKubeconfigRequests(ctx context.Context) (int, error) {
	metrics, err := cp.GardenerMetrics(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "apiserver_request_total{") && strings.Contains(line, `subresource="adminkubeconfig"`) &&
			strings.Contains(line, `verb="POST"`) {
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err != nil {
				return 0, fmt.Errorf("metric line %q: %w", line, err)
			}
			total += int(v)
		}
	}
	return total, sc.Err()
}
