// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kubectl-session is the kubectl plugin of clustergate's Sessions:
// `kubectl session open|list|approve|deny|extend|revoke`. Install it by
// putting it on the PATH, for example with
// `go install github.com/clustergate/clustergate/cmd/kubectl-session@latest`.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/sessioncli"
)

func main() {
	cmd := sessioncli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", sessioncli.Message(err))
		os.Exit(1)
	}
}
