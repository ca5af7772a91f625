// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at the
// version pinned in go.mod, for the local control plane, the e2e tests and
// the etcd image.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
