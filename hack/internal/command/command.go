// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package command runs the programs the build commands under hack/ drive
// (go, git, hack/tools/build.sh, cosign), with their output on the
// caller's terminal and their failures naming the command line.
package command

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Run runs name with args in dir, with env added to the environment and
// its output passed through.
func Run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// Output runs name with args in dir and returns its standard output
// without surrounding space.
func Output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
