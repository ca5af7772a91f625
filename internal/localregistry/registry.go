// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package localregistry runs an OCI distribution registry on 127.0.0.1:
// go-containerregistry's pkg/registry, with its blobs in a directory. The
// images of make images are pushed to it, and the install test and
// `INSTALLED=1 make run` pull from it. Manifests and tags live in memory
// only (the library keeps them there): a new registry starts empty of
// them, and images.PushLayout fills it again, sending only the blobs its
// directory lacks.
package localregistry

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Options say where a registry listens and keeps its blobs.
type Options struct {
	// Address is host:port on 127.0.0.1; empty picks a free port.
	Address string
	// BlobDir holds the blobs (sha256/<hex>), created when missing; they
	// outlive the registry.
	BlobDir string
	// Log receives one line per request; nil discards them.
	Log io.Writer
}

// Registry is a running registry.
type Registry struct {
	// Host is the registry's host:port, the prefix of its image references
	// ("127.0.0.1:41234/clustergate/etcd:v3.7.3").
	Host string

	server *http.Server
	done   chan error
}

// Start listens and serves until Close. Only a loopback address is
// accepted: the registry has no authentication and speaks plain HTTP,
// which clients (go-containerregistry, containerd) allow for loopback
// registries without configuration.
func Start(o Options) (*Registry, error) {
	if o.Address == "" {
		o.Address = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.Address)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("registry address %s: only a loopback IP address is allowed", o.Address)
	}
	if o.BlobDir == "" {
		return nil, errors.New("registry: no blob directory")
	}
	if err := os.MkdirAll(o.BlobDir, 0o755); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	l, err := net.Listen("tcp", o.Address)
	if err != nil {
		return nil, err
	}
	r := &Registry{
		Host: l.Addr().String(),
		server: &http.Server{
			Handler: registry.New(
				registry.WithBlobHandler(registry.NewDiskBlobHandler(o.BlobDir)),
				registry.Logger(log.New(o.Log, "registry: ", log.LstdFlags)),
			),
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan error, 1),
	}
	go func() { r.done <- r.server.Serve(l) }()
	return r, nil
}

// Close stops the registry and closes its connections.
func (r *Registry) Close() error {
	err := r.server.Close()
	if serveErr := <-r.done; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}
