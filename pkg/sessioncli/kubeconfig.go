// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// newKubeconfigCommand writes the kubeconfig of an existing session: the
// step after an approval, or for a session opened with --for by someone
// else.
func newKubeconfigCommand(g *globals) *cobra.Command {
	var (
		out     string
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME [--wait] [--kubeconfig-out FILE]",
		Short: "Write the kubeconfig of a Ready session; with --wait, wait for it to be Ready (through its approval)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, _, err := g.sessions()
			if err != nil {
				return err
			}
			s, err := sessions.Get(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			ready := s
			if wait {
				if ready, err = g.waitReady(cmd.Context(), s, timeout, true); err != nil {
					return err
				}
			} else if !apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
				return fmt.Errorf("session %s is not Ready (%s); add --wait to wait for it", s.Name, describeLast(s))
			}
			if out == "" {
				out = s.Name + ".kubeconfig"
			}
			if err := g.writeKubeconfig(cmd.Context(), ready, out); err != nil {
				return err
			}
			fmt.Fprintf(g.streams.ErrOut, "session %s is ready (%s); kubeconfig written to %s\n", ready.Name, expiry(ready), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "kubeconfig-out", "", "Where to write the session's kubeconfig (default ./NAME.kubeconfig).")
	f.BoolVar(&wait, "wait", false, "Wait until the session is Ready, through its approval.")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "How long --wait waits.")
	return cmd
}
