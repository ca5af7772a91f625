// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package integration runs the whole clustergate-apiserver in the test
// process, on an embedded etcd, and drives it through the generated clientset.
package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/cmd/clustergate-apiserver/app"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// config reaches the server started by TestMain as the loopback client,
// which is in system:masters.
var config *rest.Config

// etcdServers are the URLs of the server's embedded etcd.
var etcdServers []string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "clustergate-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped, err := startServer(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the server:", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-stopped
	return code
}

// startServer starts the server on a free loopback port and waits until it
// is ready. The returned channel closes once the server and its etcd stopped.
func startServer(ctx context.Context, dir string) (<-chan struct{}, error) {
	o := app.NewOptions()
	o.DataDir = dir
	serving := o.RecommendedOptions.SecureServing
	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		return nil, err
	}
	serving.Listener, serving.BindPort = listener, port
	if err := o.Complete(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	server, stopEtcd, err := o.Start(ctx)
	if err != nil {
		return nil, err
	}
	config = rest.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)
	etcdServers = o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer stopEtcd()
		if err := server.GenericAPIServer.PrepareRun().RunWithContext(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "server stopped:", err)
		}
	}()

	client, err := rawClient()
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return client.Get().AbsPath("/readyz").Do(ctx).Error() == nil, nil
	})
	return stopped, err
}

// rawClient returns a client for plain paths such as /readyz and /openapi/v2.
func rawClient() (rest.Interface, error) {
	c, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return c.Discovery().RESTClient(), nil
}

func clientset(t *testing.T) *versioned.Clientset {
	t.Helper()
	c, err := versioned.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
