// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command floor is the cheapest proxy that does the hops clustergate does,
// for `make bench-proxy` to measure clustergate against in the same run:
// the same TLS and HTTP/2 settings on both legs (the generic server's
// secure serving towards the client, pkg/credentials' transport towards
// the target) and nothing else, no authentication, authorization, logging,
// recording or session logic. It runs in a process of its own, so that its
// processor time and memory are measured as clustergate's are.
//
//	floor proxy --secure-port=… --tls-cert-file=… --tls-private-key-file=… --target-kubeconfig=…
//	floor apiserver --secure-port=… --tls-cert-file=… --tls-private-key-file=… --target-kubeconfig=… \
//	    --authentication-kubeconfig=… --authorization-kubeconfig=…
//
// proxy is the data plane's floor: httputil.ReverseProxy for requests and
// its byte relay for upgraded streams. apiserver is the aggregated path's:
// a bare generic API server with the delegated authentication and
// authorization clustergate has, whose connect subresource
// targets/proxy does only the reverse proxying. Either cuts every open
// stream on SIGUSR1, as clustergate cuts a session's streams at its
// expiry.
package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clustergate/clustergate/pkg/credentials"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "proxy" && os.Args[1] != "apiserver") {
		fmt.Fprintln(os.Stderr, "usage: floor proxy|apiserver [flags]")
		os.Exit(2)
	}
	var err error
	if os.Args[1] == "proxy" {
		err = runProxy(os.Args[2:])
	} else {
		err = runAPIServer(os.Args[2:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// targetProxy returns the reverse proxy to the target of kubeconfig, with
// the transport clustergate reaches targets with, and the cut that ends
// every request it still relays.
func targetProxy(kubeconfig string) (*httputil.ReverseProxy, *cut, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The client's own credentials are not the target's business.
			r.Out.Header.Del("Authorization")
		},
		Transport: credentials.TargetTransport(tlsConfig),
		// Watches and streams flush as they come.
		FlushInterval: -1,
	}, newCut(), nil
}

// cut cancels the requests it tracks when the process gets SIGUSR1.
type cut struct {
	mu      sync.Mutex
	cancels map[*context.CancelFunc]struct{}
}

func newCut() *cut {
	c := &cut{cancels: map[*context.CancelFunc]struct{}{}}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1)
	go func() {
		for range signals {
			c.mu.Lock()
			for cancel := range c.cancels {
				(*cancel)()
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// wrap makes next's requests end at the cut.
func (c *cut) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		c.mu.Lock()
		c.cancels[&cancel] = struct{}{}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.cancels, &cancel)
			c.mu.Unlock()
			cancel()
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// flags parses args into the flag sets the mode's options added.
func flags(args []string, add func(*pflag.FlagSet)) (string, error) {
	fs := pflag.NewFlagSet("floor", pflag.ContinueOnError)
	kubeconfig := fs.String("target-kubeconfig", "", "the target and the credentials to reach it with")
	add(fs)
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if *kubeconfig == "" {
		return "", fmt.Errorf("--target-kubeconfig is required")
	}
	return *kubeconfig, nil
}
