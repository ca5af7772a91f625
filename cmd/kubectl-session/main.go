// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kubectl-session is the kubectl plugin of clustergate's Sessions:
// `kubectl session open|list|approve|deny|extend|revoke`. Install it by
// putting it on the PATH, for example with
// `go install github.com/clustergate/clustergate/cmd/kubectl-session@latest`,
// or from a release with krew, as `kubectl clustergate`.
package main

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/clustergate/clustergate/pkg/sessioncli"
)

func main() {
	// krew installs the plugin as kubectl-clustergate (krew refuses the
	// bare name session): the help names the command as it is typed.
	name := "session"
	if n, ok := strings.CutPrefix(strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe"), "kubectl-"); ok {
		name = strings.ReplaceAll(n, "_", "-")
	}
	cmd := sessioncli.NewCommand(name, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		// As kubectl prints an error and exits 1: a refusal as "Error from
		// server (Forbidden): ...", invalid fields one a line, the rest
		// as "error: ...".
		cmdutil.CheckErr(err)
	}
}
