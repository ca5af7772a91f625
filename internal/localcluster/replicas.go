// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Replica is a further clustergate replica, behind the APIService next to
// the first one.
type Replica struct {
	// Name is the replica's component name, for StopComponent.
	Name string
	// URL is where it serves; DataPlaneURL its data plane.
	URL, DataPlaneURL string
}

// StartReplica starts another clustergate replica on the shared etcd with
// the flags of the first, each of flags ("--name=value") in place of the
// first's of that name, waits until it is ready and puts it behind the
// APIService's Service.
func (cp *ControlPlane) StartReplica(ctx context.Context, name string, flags ...string) (Replica, error) {
	if !cp.opts.SharedEtcd {
		return Replica{}, errors.New("replicas need Options.SharedEtcd")
	}
	i, err := cp.process("clustergate")
	if err != nil {
		return Replica{}, err
	}
	port, err := FreePort()
	if err != nil {
		return Replica{}, err
	}
	dataPlanePort, err := FreePort()
	if err != nil {
		return Replica{}, err
	}
	flags = append([]string{
		"--secure-port=" + strconv.Itoa(port),
		"--data-dir=" + cp.DataDir(name),
		fmt.Sprintf("--data-plane-address=127.0.0.1:%d", dataPlanePort),
	}, flags...)
	overridden := map[string]bool{}
	for _, f := range flags {
		overridden[strings.SplitN(f, "=", 2)[0]] = true
	}
	var args []string
	for _, a := range cp.procs[i].cmd.Args[1:] {
		if !overridden[strings.SplitN(a, "=", 2)[0]] {
			args = append(args, a)
		}
	}
	args = append(args, flags...)
	if err := cp.start(name, "clustergate-apiserver", args...); err != nil {
		return Replica{}, err
	}
	r := Replica{Name: name, URL: fmt.Sprintf("https://127.0.0.1:%d", port), DataPlaneURL: fmt.Sprintf("https://127.0.0.1:%d", dataPlanePort)}
	if err := cp.waitHTTP(ctx, r.URL+"/readyz", cp.certs.aggregatedCA.Pool()); err != nil {
		return Replica{}, err
	}
	cp.balanced[name] = fmt.Sprintf("127.0.0.1:%d", port)
	cp.balancer.add(cp.balanced[name])
	return r, nil
}

// Balance starts a balancer in front of backends (host:port), such as the
// replicas' data planes, that hands each new TCP connection to the next
// one in turn, as a layer-4 load balancer does, and returns its host:port.
// Stop stops it.
func (cp *ControlPlane) Balance(backends ...string) (string, error) {
	return cp.balance("127.0.0.1:0", backends...)
}

// balance is Balance listening on address.
func (cp *ControlPlane) balance(address string, backends ...string) (string, error) {
	b, err := newBalancer(address)
	if err != nil {
		return "", err
	}
	for _, backend := range backends {
		b.add(backend)
	}
	cp.balancers = append(cp.balancers, b)
	return b.ln.Addr().String(), nil
}

// FrontProxyConfig returns a client configuration for a clustergate replica
// at url that authenticates the way the aggregator does, as user with
// groups, without passing through kube-apiserver.
func (cp *ControlPlane) FrontProxyConfig(url, user string, groups ...string) *rest.Config {
	return cp.FrontProxyConfigWithUID(url, user, "", groups...)
}

// FrontProxyConfigWithUID is FrontProxyConfig for a user with a UID, as an
// authenticator that knows UIDs (OIDC, service accounts) reports it.
func (cp *ControlPlane) FrontProxyConfigWithUID(url, user, uid string, groups ...string) *rest.Config {
	cfg := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{
		CertFile: cp.certs.frontProxyClient.CertFile, KeyFile: cp.certs.frontProxyClient.KeyFile,
		CAData: cp.certs.aggregatedCA.CertPEM(), ServerName: "clustergate.clustergate-system.svc",
	}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("X-Remote-User", user)
			req.Header["X-Remote-Group"] = groups
			if uid != "" {
				req.Header.Set("X-Remote-Uid", uid)
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

// roundTripperFunc is a function as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// ServingCert issues a serving certificate for dnsName from the CA that
// issues clustergate's, which APIServices and the data plane's clients
// (DataPlaneCAFile) trust: for a benchmark's own server beside clustergate.
func (cp *ControlPlane) ServingCert(name, dnsName string) (KeyPair, error) {
	return cp.certs.aggregatedCA.ServingCert(cp.pki, name, dnsName)
}
