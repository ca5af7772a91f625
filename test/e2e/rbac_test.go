// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRBAC(t *testing.T) {
	t.Parallel()
	team := namespace(t, "team-a")
	other := namespace(t, "team-b")
	grant(t, team, "alice", "clustergate:session-user", "clustergate:target-viewer")
	grant(t, team, "root", "clustergate:session-admin")
	// An assigned owner needs a grant on the target as much as a creator,
	// and so does the assigner.
	grant(t, team, "bob", "clustergate:target-viewer")
	grant(t, team, "rose", "clustergate:session-admin", "clustergate:target-viewer")
	alice := userKubeconfig(t, "alice", "sre")
	nobody := userKubeconfig(t, "nobody")
	rose := userKubeconfig(t, "rose")

	t.Run("no binding: 403", func(t *testing.T) {
		msg := kubectlErr(t, nobody, "", "-n", team, "get", "sessions")
		if !strings.Contains(msg, "Forbidden") && !strings.Contains(msg, "forbidden") {
			t.Errorf("got %s, want forbidden", msg)
		}
	})

	t.Run("session-user works in its namespace, owner stamped", func(t *testing.T) {
		apply(t, alice, sessionManifest("alice-1", ""), "-n", team)
		owner := kubectlAs(t, alice, "-n", team, "get", "session", "alice-1", "-o", "jsonpath={.spec.owner.username} {.spec.owner.groups}")
		if owner != `alice ["sre","system:authenticated"]` {
			t.Errorf("owner = %q, want alice with her groups", owner)
		}
		kubectlAs(t, alice, "-n", team, "delete", "session", "alice-1")
	})

	t.Run("session-user gets 403 elsewhere", func(t *testing.T) {
		msg := kubectlErr(t, alice, sessionManifest("alice-2", ""), "-n", other, "apply", "-f", "-")
		if !strings.Contains(msg, "forbidden") {
			t.Errorf("got %s, want forbidden", msg)
		}
	})

	t.Run("naming another owner needs assign", func(t *testing.T) {
		msg := kubectlErr(t, alice, sessionManifest("for-bob", "bob"), "-n", team, "apply", "-f", "-")
		if !strings.Contains(msg, `may not open a session owned by "bob"`) {
			t.Errorf("got %s, want the assign refusal", msg)
		}
		apply(t, rose, sessionManifest("for-bob", "bob"), "-n", team)
		if owner := kubectl(t, "-n", team, "get", "session", "for-bob", "-o", "jsonpath={.spec.owner.username}"); owner != "bob" {
			t.Errorf("owner = %q, want bob", owner)
		}
	})

	// Resources as kubectl names them: RESOURCE.GROUP[/NAME][:SUBRESOURCE].
	tests := []struct {
		user, verb, resource, ns string
		want                     string
	}{
		{"alice", "create", "sessions.clustergate.dev:proxy", team, "yes"},
		{"alice", "get", "sessions.clustergate.dev:kubeconfig", team, "yes"},
		{"alice", "patch", "sessions.clustergate.dev", team, "yes"},
		{"alice", "update", "sessions.clustergate.dev", team, "no"},
		{"alice", "assign", "sessions.clustergate.dev", team, "no"},
		{"alice", "revoke", "sessions.clustergate.dev", team, "no"},
		{"alice", "deletecollection", "sessions.clustergate.dev", team, "no"},
		{"alice", "create", "sessions.clustergate.dev:proxy", other, "no"},
		{"alice", "viewer", "shoots.clustergate.dev/local", team, "yes"},
		{"alice", "viewer", "clusters.clustergate.dev/mc-1", team, "yes"},
		{"alice", "admin", "shoots.clustergate.dev/local", team, "no"},
		{"alice", "viewer", "shoots.clustergate.dev/local", other, "no"},
		{"root", "assign", "sessions.clustergate.dev", team, "yes"},
		// Giving owners groups beyond one's own is a separate grant.
		{"root", "assign-groups", "sessions.clustergate.dev", team, "no"},
		{"root", "revoke", "sessions.clustergate.dev", team, "yes"},
		{"root", "deletecollection", "sessions.clustergate.dev", team, "yes"},
		// session-admin grants no target either.
		{"root", "viewer", "shoots.clustergate.dev/local", team, "no"},
		{"nobody", "create", "sessions.clustergate.dev:proxy", team, "no"},
		{"alice", "create", "gardenerclusterkubeconfigs.clustergate.dev", team, "no"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("can-i %s %s as %s in %s", tt.verb, tt.resource, tt.user, tt.ns), func(t *testing.T) {
			resource, subresource, _ := strings.Cut(tt.resource, ":")
			args := []string{"auth", "can-i", tt.verb, resource, "-n", tt.ns, "--as", tt.user}
			if subresource != "" {
				args = append(args, "--subresource", subresource)
			}
			out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, nil, args...)
			// kubectl auth can-i exits 1 for "no"; its stderr, in the
			// error, warns of custom verbs, and would of unknown resources,
			// which it would then look up in the wrong group.
			if got := strings.TrimSpace(string(out)); got != tt.want || (err != nil && strings.Contains(err.Error(), "doesn't have a resource type")) {
				t.Errorf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}

	t.Run("view aggregates read access", func(t *testing.T) {
		kubectl(t, "-n", other, "create", "rolebinding", "carol-view", "--clusterrole=view", "--user=carol")
		carol := userKubeconfig(t, "carol")
		kubectlAs(t, carol, "-n", other, "get", "sessions,gck")
		msg := kubectlErr(t, carol, sessionManifest("carol-1", ""), "-n", other, "apply", "-f", "-")
		if !strings.Contains(msg, "forbidden") {
			t.Errorf("view may create sessions: %s", msg)
		}
	})
}

func TestValidatingAdmissionPolicyAppliesToSessions(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "policy")
	kubectl(t, "label", "namespace", ns, "clustergate-policy=short-sessions")
	apply(t, cp.AdminKubeconfig, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: viewer-sessions-are-short}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [clustergate.dev]
      apiVersions: ["*"]
      operations: [CREATE]
      resources: [sessions]
  validations:
  - expression: "object.spec.accessLevel.group != 'viewer' || duration(object.spec.ttl) <= duration('1h')"
    message: "viewer sessions in this namespace last at most one hour"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: viewer-sessions-are-short}
spec:
  policyName: viewer-sessions-are-short
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {clustergate-policy: short-sessions}
`)
	long := strings.Replace(sessionManifest("long", ""), "ttl: 1h", "ttl: 2h", 1)
	// The policy reaches clustergate's informers within seconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := cp.Kubectl(context.Background(), cp.AdminKubeconfig, []byte(long), "-n", ns, "create", "--dry-run=server", "-f", "-")
		if err != nil {
			if !strings.Contains(err.Error(), "viewer sessions in this namespace last at most one hour") {
				t.Fatalf("refused for another reason: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never refused the session: %s", out)
		}
		time.Sleep(time.Second)
	}
	apply(t, cp.AdminKubeconfig, sessionManifest("short", ""), "-n", ns)
}
