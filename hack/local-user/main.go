// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-user writes a garden kubeconfig for a user of the running
// local control plane, with a client certificate from its client CA, and
// prints its path.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/clustergate/clustergate/internal/localcluster"
)

func main() {
	root, _ := os.Getwd()
	dir := flag.String("dir", localcluster.DefaultDir(root), "directory of the running local control plane; "+localcluster.DirEnv+" sets it")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: hack/local-user.sh NAME [GROUP...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	path, err := localcluster.WriteUserKubeconfig(*dir, flag.Arg(0), flag.Args()[1:]...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-user:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
