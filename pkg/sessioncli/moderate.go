// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// moderating is what a follow sends to follow as its stream's moderator.
var moderating = map[string]string{v1alpha1.ModerateParameter: "true"}

func newModerateCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "moderate NAME [STREAM] | moderate end NAME [STREAM] [--reason TEXT]",
		Short: "Moderate a session whose access level requires a moderator: follow its streams, which run only while you do, and end them",
		Long: `A session whose access level requires a moderator (moderated: true in the server's
--session-access-config) runs an exec or attach only while a moderator follows it:
someone other than the owner who holds the verb "moderate" on the session (and get
on sessions/recordings). Until one does, the owner's terminal says that the stream
waits for a moderator, and after the server's --session-moderator-wait (2m by
default) it is refused. When the last moderator stops following, the stream ends
(within about 10 s, so that a follow the control plane cuts and asks for again does
not end it).

kubectl session moderate NAME follows every stream of the session as it opens, as
kubectl session watch does, as its moderator; with STREAM it follows that stream
alone in the terminal, as kubectl session replay NAME STREAM --follow does. Ctrl-C
stops moderating.

kubectl session moderate end NAME STREAM ends one stream (it needs create on
sessions/moderation too): the owner's terminal shows your name and --reason.
Without STREAM it ends the whole session, as kubectl session revoke does (it needs
delete and "revoke" on sessions). Nobody moderates a session they own.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				return g.replayFollowing(cmd.Context(), args[0], args[1], moderating, "", false)
			}
			return g.watch(cmd.Context(), args[0], moderating)
		},
	}
	cmd.AddCommand(newModerateEndCommand(g))
	return cmd
}

func newModerateEndCommand(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "end NAME [STREAM] [--reason TEXT]",
		Short: "End one stream of a moderated session, or the whole session (revoke)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				sessions, _, err := g.sessions()
				if err != nil {
					return err
				}
				if err := sessions.Delete(cmd.Context(), args[0], metav1.DeleteOptions{}); err != nil {
					return err
				}
				fmt.Fprintf(g.streams.Out, "session %s revoked\n", args[0])
				return nil
			}
			return g.endStream(cmd.Context(), args[0], args[1], reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "Why the stream ends: the owner's terminal shows it.")
	return cmd
}

// endStream asks the server to end stream of session name.
func (g *globals) endStream(ctx context.Context, name, stream, reason string) error {
	ns, err := g.namespace()
	if err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	req := c.ClustergateV1alpha1().RESTClient().Post().Namespace(ns).Resource("sessions").Name(name).
		SubResource("moderation", "streams", stream)
	if reason != "" {
		req = req.Param("reason", reason)
	}
	if _, err := doRaw(ctx, req); err != nil {
		return err
	}
	fmt.Fprintf(g.streams.Out, "stream %s of session %s ends\n", stream, name)
	return nil
}
