// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessioncli is the kubectl-session plugin: it opens, lists,
// approves, denies, extends and revokes clustergate Sessions, and reads
// back what they recorded (recordings, history, replay), with the
// caller's kubeconfig and kubectl's global flags (-n, --kubeconfig,
// --context, ...). Every refusal comes back as the server's error, which
// kubectl-session prints as kubectl does.
package sessioncli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	clustergatev1alpha1 "github.com/clustergate/clustergate/pkg/generated/clientset/versioned/typed/clustergate/v1alpha1"
)

// globals are kubectl's global flags and the streams of one invocation.
type globals struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
}

// NewCommand returns the `kubectl session` command with its subcommands;
// name is what the user types after kubectl ("session", or "clustergate"
// when krew installed it).
func NewCommand(name string, streams genericiooptions.IOStreams) *cobra.Command {
	g := &globals{flags: genericclioptions.NewConfigFlags(true), streams: streams}
	cmd := &cobra.Command{
		Use: name,
		// Usage lines then read "kubectl session open ...", as typed.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + name},
		Short:       "Open, list, approve, deny, extend, revoke and lock clustergate break-glass sessions, and read what they recorded",
		Long: `Sessions are time-limited, owner-bound sessions to a target cluster. Sessions of
access groups that need approval wait until another user with the verb "approve"
approves them; their expiry starts then.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	g.flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newOpenCommand(g), newListCommand(g), newDecideCommand(g, true), newDecideCommand(g, false),
		newExtendCommand(g), newRevokeCommand(g), newKubeconfigCommand(g), newLockCommand(g), newUnlockCommand(g), newLocksCommand(g),
		newRecordingsCommand(g), newHistoryCommand(g), newReplayCommand(g), newWatchCommand(g), newModerateCommand(g), newPolicyCommand(g))
	return cmd
}

// namespace is the namespace of -n, or of the kubeconfig's context.
func (g *globals) namespace() (string, error) {
	ns, _, err := g.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// client returns the clientset of the caller's kubeconfig.
func (g *globals) client() (versioned.Interface, error) {
	cfg, err := g.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return versioned.NewForConfig(cfg)
}

// sessions returns the client of the Sessions in the namespace.
func (g *globals) sessions() (clustergatev1alpha1.SessionInterface, string, error) {
	ns, err := g.namespace()
	if err != nil {
		return nil, "", err
	}
	c, err := g.client()
	if err != nil {
		return nil, "", err
	}
	return c.ClustergateV1alpha1().Sessions(ns), ns, nil
}
