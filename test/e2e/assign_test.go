// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAssignNeedsTheAssignersOwnAccess: an assigner types the owner's
// groups, so assign alone reaches no target. Giving the owner a system group
// or a group the assigner is not in needs assign-groups, and even then the
// assigner must hold the access level on the target themselves.
func TestAssignNeedsTheAssignersOwnAccess(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "assign-groups")
	kubectl(t, "-n", ns, "create", "role", "admin-on-local", "--verb=admin", "--resource=shoots.clustergate.dev", "--resource-name=local")
	kubectl(t, "-n", ns, "create", "rolebinding", "shoot-admins-on-local", "--role=admin-on-local", "--group=shoot-admins")
	kubectl(t, "-n", ns, "create", "role", "group-assigner", "--verb=assign-groups", "--resource=sessions.clustergate.dev")
	// amy assigns and holds no target; gus may give any group, no target
	// either; kim assigns and is in shoot-admins.
	grant(t, ns, "amy", "clustergate:session-admin")
	grant(t, ns, "gus", "clustergate:session-admin")
	kubectl(t, "-n", ns, "create", "rolebinding", "gus-group-assigner", "--role=group-assigner", "--user=gus")
	grant(t, ns, "kim", "clustergate:session-admin")
	amy, gus, kim := userKubeconfig(t, "amy", "team"), userKubeconfig(t, "gus", "team"), userKubeconfig(t, "kim", "shoot-admins")

	tests := []struct {
		name, kubeconfig, owner, want string
	}{
		{name: "an assigner claiming system:masters", kubeconfig: amy, owner: "{username: amy-too, groups: [system:masters]}",
			want: fmt.Sprintf(`user "amy" may not open a session owned by "amy-too" with the groups ["system:masters"]: that needs the verb "assign-groups" on sessions in namespace %q`, ns)},
		{name: "an assigner claiming a granted group they are not in", kubeconfig: amy, owner: "{username: amy-too, groups: [shoot-admins]}",
			want: `with the groups ["shoot-admins"]: that needs the verb "assign-groups"`},
		{name: "with assign-groups, still not without the grant", kubeconfig: gus, owner: "{username: gus-too, groups: [shoot-admins]}",
			want: fmt.Sprintf(`user "gus" may not open "admin" sessions to shoots/local/local in namespace %s for "gus-too": that needs the verb "admin" on shoots.clustergate.dev named "local"`, ns)},
		{name: "an assigner with the grant, in the group they give", kubeconfig: kim, owner: "{username: kim-too, groups: [shoot-admins, system:authenticated]}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Until the garden's RBAC has seen the bindings, refusals say
			// something else.
			eventually(t, 30*time.Second, "the answer", func() error {
				err := create(tt.kubeconfig, ns, targetSession("assigned", tt.owner, "admin", "shoot/local"), true, false)
				switch {
				case tt.want == "" && err != nil:
					return err
				case tt.want != "" && err == nil:
					return fmt.Errorf("succeeded, want an error saying %q", tt.want)
				case tt.want != "" && (!strings.Contains(err.Error(), tt.want) || !strings.Contains(strings.ToLower(err.Error()), "forbidden")):
					return fmt.Errorf("got %w, want a 403 saying %q", err, tt.want)
				}
				return nil
			})
		})
	}
}
