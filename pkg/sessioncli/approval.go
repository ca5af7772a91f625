// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/approvalpolicy"
	"github.com/clustergate/clustergate/pkg/registry/table"
)

// progress says how far a pending request got: "1 of 2 approved (bob)".
func progress(a *v1alpha1.SessionApproval) string {
	names := a.Approvers()
	out := fmt.Sprintf("%d of %d approved", len(names), a.RequiredApprovers())
	if len(names) > 0 {
		out += " (" + strings.Join(names, ", ") + ")"
	}
	return out
}

// mayApprove says who may decide on the requests of s: the approvers of the
// SessionApprovalPolicy it keeps, or under the flags any holder of the verb
// approve.
func mayApprove(s *v1alpha1.Session) string {
	p := s.Status.ApprovalPolicy
	if p == nil || p.Approvers == nil {
		who := approvalpolicy.Who(nil, nil) + " on sessions"
		if p != nil {
			who += fmt.Sprintf(" (SessionApprovalPolicy %q)", p.Name)
		}
		return who
	}
	who := approvalpolicy.Who(p.Approvers.Users, p.Approvers.Groups)
	if ex := p.Approvers.ExcludeOwnerGroups; len(ex) > 0 {
		who += fmt.Sprintf(" who share none of the groups %q with the owner", ex)
	}
	return who + fmt.Sprintf(" (SessionApprovalPolicy %q)", p.Name)
}

// pendingColumns are what list --pending adds to the server's table.
var pendingColumns = []metav1.TableColumnDefinition{
	{Name: "Missing", Type: "string", Description: "How many approvals the pending request still needs, of how many."},
	{Name: "May-Approve", Type: "string", Description: "Users and groups (group:NAME) who may approve; <none> is any holder of the verb approve."},
	{Name: "Policy", Type: "string", Description: "The SessionApprovalPolicy the session keeps; <none> is the server's flags."},
}

// pendingCells are the cells of pendingColumns for the session in raw, the
// object of a table row.
func pendingCells(raw []byte) []any {
	s := &v1alpha1.Session{}
	if err := json.Unmarshal(raw, s); err != nil || len(s.Status.Approvals) == 0 {
		return []any{table.None, table.None, table.None}
	}
	a := &s.Status.Approvals[len(s.Status.Approvals)-1]
	missing := fmt.Sprintf("%d of %d", a.RequiredApprovers()-int32(len(a.Approvers())), a.RequiredApprovers())
	who, policy := table.None, table.None
	if p := s.Status.ApprovalPolicy; p != nil {
		policy = p.Name
		if p.Approvers != nil {
			names := append([]string{}, p.Approvers.Users...)
			for _, g := range p.Approvers.Groups {
				names = append(names, "group:"+g)
			}
			who = table.OrNone(strings.Join(names, ","))
		}
	}
	return []any{missing, who, policy}
}

func newPolicyCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Ask which SessionApprovalPolicy a session would be under, and who would approve it",
	}
	o := &openOptions{}
	test := &cobra.Command{
		Use:   "test shoot/[PROJECT/]NAME|cluster/NAME --access GROUP [--ttl DURATION] [--namespaces NS,...] [--reason TEXT] [--for USER]",
		Short: "Say which SessionApprovalPolicy would govern the session open would create, and who would approve it",
		Long: `Say which SessionApprovalPolicy would govern the session that open would create with the
same arguments, whether it would wait for approval, how many approvers and who, or whether
the policy would approve it at once. The server answers a dry run of the create: nothing is
stored, and whatever would refuse the session (its access to the target, a lock, the policy's
maxTTL or reason) refuses the test as it would the session.
  kubectl session policy test shoot/prod --access admin --ttl 1h -n demo`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.session(args[0])
			if err != nil {
				return err
			}
			sessions, _, err := g.sessions()
			if err != nil {
				return err
			}
			tried, err := sessions.Create(cmd.Context(), s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(g.streams.Out, describePolicy(tried))
			return err
		},
	}
	f := test.Flags()
	f.StringVar(&o.access, "access", "", "Access group of the session, such as viewer or admin.")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "Namespaces of the target the session reaches; the whole target when not set.")
	f.DurationVar(&o.ttl, "ttl", time.Hour, "How long the session would last, such as 1h.")
	f.StringVar(&o.reason, "reason", "", "Why: an incident or ticket.")
	f.StringVar(&o.owner, "for", "", "Ask for a session of this user (needs the verb assign).")
	_ = test.MarkFlagRequired("access")
	cmd.AddCommand(test)
	return cmd
}

// describePolicy says what the server decided about the dry-run session s:
// the policy that governs it and what its opening waits for.
func describePolicy(s *v1alpha1.Session) string {
	var b strings.Builder
	if p := s.Status.ApprovalPolicy; p != nil {
		fmt.Fprintf(&b, "policy: SessionApprovalPolicy %q (generation %d)\n", p.Name, p.Generation)
	} else {
		fmt.Fprintf(&b, "policy: none selects the session; the server's flags apply\n")
	}
	if len(s.Status.Approvals) == 0 {
		fmt.Fprintf(&b, "approval: not required; the session opens at once\n")
		return b.String()
	}
	switch a := &s.Status.Approvals[0]; a.Decision {
	case v1alpha1.ApprovalApproved:
		fmt.Fprintf(&b, "approval: approved at once by %s (%q)\n", a.DecidedBy, a.Reason)
	default:
		fmt.Fprintf(&b, "approval: required, by %d distinct approver(s)\n", a.RequiredApprovers())
		fmt.Fprintf(&b, "may approve: %s; never the owner\n", mayApprove(s))
	}
	return b.String()
}
