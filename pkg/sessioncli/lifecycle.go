// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

func newDecideCommand(g *globals, approve bool) *cobra.Command {
	verb, decision := "deny", v1alpha1.ApprovalDenied
	if approve {
		verb, decision = v1alpha1.VerbApprove, v1alpha1.ApprovalApproved
	}
	var reason string
	cmd := &cobra.Command{
		Use:   verb + " NAME [--reason TEXT]",
		Short: fmt.Sprintf("%s what a session waits for: its opening or an extension", map[bool]string{true: "Approve", false: "Deny"}[approve]),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, _, err := g.sessions()
			if err != nil {
				return err
			}
			var decided *v1alpha1.Session
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				s, err := sessions.Get(cmd.Context(), args[0], metav1.GetOptions{})
				if err != nil {
					return err
				}
				if err := decide(s, decision, reason); err != nil {
					return err
				}
				decided, err = sessions.UpdateApproval(cmd.Context(), s.Name, s, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "session %s: %s\n", decided.Name, describeLast(decided))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "Why, recorded with the decision.")
	return cmd
}

// decide writes a decision into the session's pending approval.
func decide(s *v1alpha1.Session, decision v1alpha1.ApprovalDecision, reason string) error {
	pending := s.Status.PendingApproval()
	if pending == nil {
		return fmt.Errorf("session %s/%s waits for no approval", s.Namespace, s.Name)
	}
	pending.Decision, pending.Reason = decision, reason
	return nil
}

// describeLast says what the session's last approval is and when it expires.
func describeLast(s *v1alpha1.Session) string {
	n := len(s.Status.Approvals)
	if n == 0 {
		return expiry(s)
	}
	a := s.Status.Approvals[n-1]
	what := "opening"
	if a.Type == v1alpha1.ApprovalExtend {
		what = "extension by " + a.Duration.Duration.String()
	}
	out := fmt.Sprintf("%s %s", what, map[v1alpha1.ApprovalDecision]string{
		v1alpha1.ApprovalPending: "waits for approval", v1alpha1.ApprovalApproved: "approved", v1alpha1.ApprovalDenied: "denied",
	}[a.Decision])
	switch {
	case a.Decision == v1alpha1.ApprovalPending && (a.RequiredApprovers() > 1 || len(a.Decisions) > 0):
		out += ": " + progress(&a)
	case a.DecidedBy != "":
		out += " by " + a.DecidedBy
		if a.Reason != "" {
			out += fmt.Sprintf(" (%q)", a.Reason)
		}
		if names := a.Approvers(); len(names) > 1 {
			out += ", approvers " + strings.Join(names, ", ")
		}
	}
	return out + "; " + expiry(s)
}

func expiry(s *v1alpha1.Session) string {
	if s.Status.ExpiresAt == nil {
		return "no expiry yet"
	}
	return "expires at " + s.Status.ExpiresAt.UTC().Format(time.RFC3339)
}

func newExtendCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "extend NAME DURATION",
		Short: "Move a session's expiry later by DURATION (for example 30m), with approval where its access group needs one",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			by, err := parseDuration(args[1])
			if err != nil {
				return err
			}
			sessions, _, err := g.sessions()
			if err != nil {
				return err
			}
			var extended *v1alpha1.Session
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				s, err := sessions.Get(cmd.Context(), args[0], metav1.GetOptions{})
				if err != nil {
					return err
				}
				if s.Status.ExpiresAt == nil {
					return fmt.Errorf("session %s/%s waits for approval; it can be extended once approved", s.Namespace, s.Name)
				}
				s.Status.ExpiresAt = &metav1.Time{Time: s.Status.ExpiresAt.Add(by)}
				extended, err = sessions.UpdateExtension(cmd.Context(), s.Name, s, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "session %s: %s\n", extended.Name, describeLast(extended))
			return nil
		},
	}
}

// parseDuration reads a positive duration of whole seconds at least.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as 30m or 1h: %w", s, err)
	case d < time.Second:
		return 0, fmt.Errorf("the duration %s must be at least 1s", d)
	}
	return d, nil
}

func newRevokeCommand(g *globals) *cobra.Command {
	var owner string
	var all bool
	cmd := &cobra.Command{
		Use:   "revoke NAME | revoke --user USER [-A]",
		Short: "End a session now, or every session of a user (in the namespace, or with -A in all)",
		Args: func(_ *cobra.Command, args []string) error {
			if (len(args) == 1) == (owner != "") {
				return fmt.Errorf("name either one session or --user, not both or neither")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, ns, err := g.sessions()
			if err != nil {
				return err
			}
			if owner == "" {
				if err := sessions.Delete(cmd.Context(), args[0], metav1.DeleteOptions{}); err != nil {
					return err
				}
				fmt.Fprintf(g.streams.Out, "session %s revoked\n", args[0])
				return nil
			}
			if all {
				ns = metav1.NamespaceAll
			}
			return g.revokeUser(cmd.Context(), ns, owner)
		},
	}
	cmd.Flags().StringVar(&owner, "user", "", "Revoke every session this user owns.")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "With --user: in every namespace.")
	return cmd
}

// revokeUser deletes every session of owner in ns, one by one as kubectl
// delete does, so that each is authorized on its own.
func (g *globals) revokeUser(ctx context.Context, ns, owner string) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	list, err := c.ClustergateV1alpha1().Sessions(ns).List(ctx, metav1.ListOptions{FieldSelector: v1alpha1.FieldOwnerUsername + "=" + owner})
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if err := c.ClustergateV1alpha1().Sessions(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		fmt.Fprintf(g.streams.Out, "session %s/%s revoked\n", s.Namespace, s.Name)
	}
	fmt.Fprintf(g.streams.Out, "%d sessions of %s revoked\n", len(list.Items), owner)
	return nil
}
