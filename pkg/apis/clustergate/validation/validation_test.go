// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

var created = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func validSession() *clustergate.Session {
	return &clustergate.Session{
		ObjectMeta: metav1.ObjectMeta{Name: "fix-etcd", Namespace: "sre", CreationTimestamp: metav1.NewTime(created)},
		Spec: clustergate.SessionSpec{
			TTL:         metav1.Duration{Duration: time.Hour},
			Owner:       clustergate.SessionOwner{Username: "alice", Groups: []string{"sre"}},
			AccessLevel: clustergate.AccessLevel{Group: "viewer"},
			Target:      clustergate.SessionTarget{Shoot: &clustergate.ShootReference{Name: "local"}},
		},
	}
}

func validKubeconfig() *clustergate.GardenerClusterKubeconfig {
	return &clustergate.GardenerClusterKubeconfig{
		ObjectMeta: metav1.ObjectMeta{Name: "c-123", Namespace: "kcp-system"},
		Spec: clustergate.GardenerClusterKubeconfigSpec{
			Shoot: clustergate.ShootReference{Name: "c-123"},
			Kubeconfig: clustergate.KubeconfigTarget{Secret: clustergate.SecretKeyReference{
				Name: "kubeconfig-c-123", Namespace: "kcp-system", Key: "config",
			}},
		},
	}
}

// errorPaths lists "type path" for every error, so a test states both what
// went wrong and where.
func errorPaths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestValidateSession(t *testing.T) {
	policy := DefaultSessionLimits()
	// debugger holds only in namespaces, nodes only on whole targets.
	policy.AccessGroups.Insert("debugger", "nodes")
	policy.WholeTargetGroups = sets.New("admin", "viewer", "nodes")
	policy.ScopableGroups.Insert("debugger")
	scope := func(level string, namespaces ...string) func(*clustergate.Session) {
		return func(s *clustergate.Session) {
			s.Spec.AccessLevel.Group = level
			s.Spec.Scope = &clustergate.SessionScope{Namespaces: namespaces}
		}
	}
	tests := []struct {
		name   string
		mutate func(*clustergate.Session)
		want   []string
	}{
		{name: "valid shoot target", mutate: func(*clustergate.Session) {}},
		{name: "valid cluster target", mutate: func(s *clustergate.Session) {
			s.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{
				KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc-1"},
				SignerName:          "kubernetes.io/kube-apiserver-client",
			}}
		}},
		{name: "valid ttl at the minimum", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = 10 * time.Minute }},
		{name: "valid ttl at the maximum", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = 24 * time.Hour }},
		{name: "valid admin access", mutate: func(s *clustergate.Session) { s.Spec.AccessLevel.Group = "admin" }},
		{name: "valid reason at the maximum", mutate: func(s *clustergate.Session) { s.Spec.Reason = strings.Repeat("r", MaxReasonLength) }},
		{name: "reason too long", mutate: func(s *clustergate.Session) { s.Spec.Reason = strings.Repeat("r", MaxReasonLength+1) },
			want: []string{"FieldValueTooLong spec.reason"}},

		{name: "name missing", mutate: func(s *clustergate.Session) { s.Name = "" },
			want: []string{"FieldValueRequired metadata.name"}},
		{name: "name not a DNS label", mutate: func(s *clustergate.Session) { s.Name = "Fix_Etcd" },
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "name with dots", mutate: func(s *clustergate.Session) { s.Name = "fix.etcd" },
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "name longer than 63", mutate: func(s *clustergate.Session) { s.Name = strings.Repeat("a", 64) },
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "namespace missing", mutate: func(s *clustergate.Session) { s.Namespace = "" },
			want: []string{"FieldValueRequired metadata.namespace"}},
		{name: "ttl missing", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = 0 },
			want: []string{"FieldValueRequired spec.ttl"}},
		{name: "ttl negative", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = -time.Hour },
			want: []string{"FieldValueInvalid spec.ttl"}},
		{name: "ttl below the minimum", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = 9 * time.Minute },
			want: []string{"FieldValueInvalid spec.ttl"}},
		{name: "ttl above the maximum", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = 25 * time.Hour },
			want: []string{"FieldValueInvalid spec.ttl"}},
		{name: "owner missing", mutate: func(s *clustergate.Session) { s.Spec.Owner = clustergate.SessionOwner{} },
			want: []string{"FieldValueRequired spec.owner.username"}},
		{name: "owner group empty", mutate: func(s *clustergate.Session) { s.Spec.Owner.Groups = []string{"sre", ""} },
			want: []string{"FieldValueInvalid spec.owner.groups[1]"}},
		{name: "access group missing", mutate: func(s *clustergate.Session) { s.Spec.AccessLevel.Group = "" },
			want: []string{"FieldValueRequired spec.accessLevel.group"}},
		{name: "access group not configured", mutate: func(s *clustergate.Session) { s.Spec.AccessLevel.Group = "root" },
			want: []string{"FieldValueNotSupported spec.accessLevel.group"}},
		{name: "valid scoped admin", mutate: scope("admin", "shop", "shop-db")},
		{name: "valid scoped debugger", mutate: scope("debugger", "shop")},
		{name: "valid whole-target level", mutate: func(s *clustergate.Session) { s.Spec.AccessLevel.Group = "nodes" }},
		{name: "scoped-only level unscoped", mutate: func(s *clustergate.Session) { s.Spec.AccessLevel.Group = "debugger" },
			want: []string{"FieldValueRequired spec.scope.namespaces"}},
		{name: "whole-target level scoped", mutate: scope("nodes", "shop"),
			want: []string{"FieldValueForbidden spec.scope"}},
		{name: "scope without namespaces", mutate: scope("admin"),
			want: []string{"FieldValueRequired spec.scope.namespaces"}},
		{name: "scope namespace not a DNS label", mutate: scope("admin", "shop", "Shop_DB"),
			want: []string{"FieldValueInvalid spec.scope.namespaces[1]"}},
		{name: "scope namespace twice", mutate: scope("admin", "shop", "shop"),
			want: []string{"FieldValueDuplicate spec.scope.namespaces[1]"}},
		{name: "scope namespace empty", mutate: scope("admin", ""),
			want: []string{"FieldValueRequired spec.scope.namespaces[0]"}},
		{name: "scope too wide", mutate: scope("admin", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"),
			want: []string{"FieldValueTooMany spec.scope.namespaces"}},
		{name: "no target", mutate: func(s *clustergate.Session) { s.Spec.Target = clustergate.SessionTarget{} },
			want: []string{"FieldValueRequired spec.target"}},
		{name: "two targets", mutate: func(s *clustergate.Session) {
			s.Spec.Target.Cluster = &clustergate.ClusterTarget{KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc-1"}, SignerName: "a.io/b"}
		}, want: []string{"FieldValueForbidden spec.target.cluster"}},
		{name: "shoot name missing", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Name = "" },
			want: []string{"FieldValueRequired spec.target.shoot.name"}},
		{name: "shoot name not a DNS label", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Name = "Local" },
			want: []string{"FieldValueInvalid spec.target.shoot.name"}},
		{name: "valid shoot of a project", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Project = "shop" }},
		{name: "shoot project not a DNS label", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Project = "Shop_1" },
			want: []string{"FieldValueInvalid spec.target.shoot.project"}},
		{name: "shoot project longer than 63", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Project = strings.Repeat("p", 64) },
			want: []string{"FieldValueInvalid spec.target.shoot.project"}},
		{name: "shoot name too long", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Name = strings.Repeat("s", 64) },
			want: []string{"FieldValueInvalid spec.target.shoot.name"}},
		{name: "cluster secret missing", mutate: func(s *clustergate.Session) {
			s.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{SignerName: "a.io/b"}}
		}, want: []string{"FieldValueRequired spec.target.cluster.kubeconfigSecretRef.name"}},
		{name: "cluster secret not a DNS label", mutate: func(s *clustergate.Session) {
			s.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{
				KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc/1"}, SignerName: "a.io/b"}}
		}, want: []string{"FieldValueInvalid spec.target.cluster.kubeconfigSecretRef.name"}},
		{name: "signer missing", mutate: func(s *clustergate.Session) {
			s.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{
				KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc-1"}}}
		}, want: []string{"FieldValueRequired spec.target.cluster.signerName"}},
		{name: "signer without domain", mutate: func(s *clustergate.Session) {
			s.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{
				KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc-1"}, SignerName: "kube-apiserver-client"}}
		}, want: []string{"FieldValueInvalid spec.target.cluster.signerName"}},
		{name: "signer with bad domain", mutate: func(s *clustergate.Session) {
			s.Spec.Target = clustergate.SessionTarget{Cluster: &clustergate.ClusterTarget{
				KubeconfigSecretRef: clustergate.LocalSecretReference{Name: "mc-1"}, SignerName: "Not_A_Domain/x"}}
		}, want: []string{"FieldValueInvalid spec.target.cluster.signerName"}},
		{name: "several errors at once", mutate: func(s *clustergate.Session) {
			s.Spec.TTL.Duration = 0
			s.Spec.AccessLevel.Group = "root"
			s.Spec.Target.Shoot.Name = ""
		}, want: []string{
			"FieldValueRequired spec.ttl",
			"FieldValueNotSupported spec.accessLevel.group",
			"FieldValueRequired spec.target.shoot.name",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSession()
			tt.mutate(s)
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSession(s, policy))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSessionRespectsPolicy(t *testing.T) {
	policy := SessionLimits{MinTTL: time.Minute, MaxTTL: 2 * time.Hour, AccessGroups: sets.New("breakglass")}
	s := validSession()
	s.Spec.TTL.Duration = 5 * time.Minute
	s.Spec.AccessLevel.Group = "breakglass"
	if errs := ValidateSession(s, policy); len(errs) != 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	s.Spec.AccessLevel.Group = "viewer"
	s.Spec.TTL.Duration = 3 * time.Hour
	want := []string{"FieldValueInvalid spec.ttl", "FieldValueNotSupported spec.accessLevel.group"}
	if diff := cmp.Diff(want, errorPaths(ValidateSession(s, policy))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateSessionRequiresReason(t *testing.T) {
	policy := DefaultSessionLimits()
	policy.RequireReason = true
	s := validSession()
	if diff := cmp.Diff([]string{"FieldValueRequired spec.reason"}, errorPaths(ValidateSession(s, policy))); diff != "" {
		t.Errorf("without a reason (-want +got):\n%s", diff)
	}
	s.Spec.Reason = "INC-4711: etcd is out of space"
	if errs := ValidateSession(s, policy); len(errs) != 0 {
		t.Errorf("with a reason: %v", errs)
	}
}

func TestValidateSessionUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*clustergate.Session)
		want   []string
	}{
		{name: "labels may change", mutate: func(s *clustergate.Session) { s.Labels = map[string]string{"team": "sre"} }},
		{name: "ttl is immutable", mutate: func(s *clustergate.Session) { s.Spec.TTL.Duration = 2 * time.Hour },
			want: []string{"FieldValueInvalid spec"}},
		{name: "owner is immutable", mutate: func(s *clustergate.Session) { s.Spec.Owner.Username = "mallory" },
			want: []string{"FieldValueInvalid spec"}},
		{name: "target is immutable", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Name = "other" },
			want: []string{"FieldValueInvalid spec"}},
		{name: "target project is immutable", mutate: func(s *clustergate.Session) { s.Spec.Target.Shoot.Project = "pay" },
			want: []string{"FieldValueInvalid spec"}},
		{name: "access level is immutable", mutate: func(s *clustergate.Session) { s.Spec.AccessLevel.Group = "admin" },
			want: []string{"FieldValueInvalid spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validSession()
			old.ResourceVersion = "1"
			s := old.DeepCopy()
			tt.mutate(s)
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionUpdate(s, old))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSessionStatusUpdate(t *testing.T) {
	expiresAt := metav1.NewTime(created.Add(time.Hour))
	tests := []struct {
		name      string
		oldStatus clustergate.SessionStatus
		status    clustergate.SessionStatus
		want      []string
	}{
		{name: "expiry set through status", status: clustergate.SessionStatus{ExpiresAt: &expiresAt},
			want: []string{"FieldValueForbidden status.expiresAt"}},
		{name: "expiry kept", oldStatus: clustergate.SessionStatus{ExpiresAt: &expiresAt},
			status: clustergate.SessionStatus{ExpiresAt: &expiresAt, BackendURL: "https://127.0.0.1:6443"}},
		{name: "expiry moved later through status", oldStatus: clustergate.SessionStatus{ExpiresAt: &expiresAt},
			status: clustergate.SessionStatus{ExpiresAt: ptrTime(created.Add(time.Hour + time.Second))},
			want:   []string{"FieldValueForbidden status.expiresAt"}},
		{name: "approvals kept", oldStatus: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			status: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}}},
		{name: "approval decided through status", oldStatus: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{pendingOpen()}},
			status: clustergate.SessionStatus{Approvals: []clustergate.SessionApproval{decided(pendingOpen(), clustergate.ApprovalApproved)}},
			want:   []string{"FieldValueForbidden status.approvals"}},
		{name: "approval policy dropped through status", oldStatus: clustergate.SessionStatus{
			ApprovalPolicy: &clustergate.AppliedApprovalPolicy{Name: "shop", ApprovalRequired: true}},
			want: []string{"FieldValueForbidden status.approvalPolicy"}},
		{name: "deleter set through status", status: clustergate.SessionStatus{DeletedBy: "mallory"},
			want: []string{"FieldValueForbidden status.deletedBy"}},
		{name: "deleter changed through status", oldStatus: clustergate.SessionStatus{DeletedBy: "bob"},
			status: clustergate.SessionStatus{DeletedBy: "mallory"}, want: []string{"FieldValueForbidden status.deletedBy"}},
		{name: "deleter kept", oldStatus: clustergate.SessionStatus{DeletedBy: "bob"}, status: clustergate.SessionStatus{DeletedBy: "bob"}},
		{name: "expiry removed", oldStatus: clustergate.SessionStatus{ExpiresAt: &expiresAt},
			want: []string{"FieldValueForbidden status.expiresAt"}},
		{name: "backend not https", status: clustergate.SessionStatus{BackendURL: "http://127.0.0.1:6443"},
			want: []string{"FieldValueInvalid status.backendURL"}},
		{name: "backend without host", status: clustergate.SessionStatus{BackendURL: "https://"},
			want: []string{"FieldValueInvalid status.backendURL"}},
		{name: "observed generation negative", status: clustergate.SessionStatus{ObservedGeneration: -1},
			want: []string{"FieldValueInvalid status.observedGeneration"}},
		{name: "condition without reason", status: clustergate.SessionStatus{Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)}}},
			want: []string{"FieldValueRequired status.conditions[0].reason"}},
		{name: "condition with bad status", status: clustergate.SessionStatus{Conditions: []metav1.Condition{{
			Type: "Ready", Status: "Maybe", Reason: "Minted", LastTransitionTime: metav1.NewTime(created)}}},
			want: []string{"FieldValueNotSupported status.conditions[0].status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validSession()
			old.ResourceVersion = "1"
			old.Status = tt.oldStatus
			s := old.DeepCopy()
			s.Status = tt.status
			if diff := cmp.Diff(tt.want, errorPaths(ValidateSessionStatusUpdate(s, old, created.Add(10*time.Minute)))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateGardenerClusterKubeconfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*clustergate.GardenerClusterKubeconfig)
		want   []string
	}{
		{name: "valid", mutate: func(*clustergate.GardenerClusterKubeconfig) {}},
		{name: "valid dotted key", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Key = "kube.config" }},

		{name: "name not a DNS label", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Name = "C_123" },
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "name longer than 63", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Name = strings.Repeat("c", 64) },
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "shoot missing", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Shoot.Name = "" },
			want: []string{"FieldValueRequired spec.shoot.name"}},
		{name: "shoot not a DNS label", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Shoot.Name = "c.123" },
			want: []string{"FieldValueInvalid spec.shoot.name"}},
		{name: "valid shoot of a project", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Shoot.Project = "pay" }},
		{name: "shoot project not a DNS label", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Shoot.Project = "garden.pay" },
			want: []string{"FieldValueInvalid spec.shoot.project"}},
		{name: "secret name missing", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Name = "" },
			want: []string{"FieldValueRequired spec.kubeconfig.secret.name"}},
		{name: "secret name not a DNS label", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Name = "Kubeconfig" },
			want: []string{"FieldValueInvalid spec.kubeconfig.secret.name"}},
		{name: "secret in another namespace", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Namespace = "kube-system" },
			want: []string{"FieldValueInvalid spec.kubeconfig.secret.namespace"}},
		{name: "secret namespace missing", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Namespace = "" },
			want: []string{"FieldValueInvalid spec.kubeconfig.secret.namespace"}},
		{name: "key missing", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Key = "" },
			want: []string{"FieldValueRequired spec.kubeconfig.secret.key"}},
		{name: "key with slash", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Key = "a/b" },
			want: []string{"FieldValueInvalid spec.kubeconfig.secret.key"}},
		{name: "key dot-dot", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Key = ".." },
			want: []string{"FieldValueInvalid spec.kubeconfig.secret.key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := validKubeconfig()
			tt.mutate(k)
			if diff := cmp.Diff(tt.want, errorPaths(ValidateGardenerClusterKubeconfig(k))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateGardenerClusterKubeconfigUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*clustergate.GardenerClusterKubeconfig)
		want   []string
	}{
		{name: "secret may move", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Name = "other" }},
		{name: "shoot is immutable", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Shoot.Name = "c-456" },
			want: []string{"FieldValueInvalid spec.shoot"}},
		{name: "shoot project is immutable", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Shoot.Project = "pay" },
			want: []string{"FieldValueInvalid spec.shoot"}},
		{name: "new spec is validated too", mutate: func(k *clustergate.GardenerClusterKubeconfig) { k.Spec.Kubeconfig.Secret.Key = "a b" },
			want: []string{"FieldValueInvalid spec.kubeconfig.secret.key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validKubeconfig()
			old.ResourceVersion = "1"
			k := old.DeepCopy()
			tt.mutate(k)
			if diff := cmp.Diff(tt.want, errorPaths(ValidateGardenerClusterKubeconfigUpdate(k, old))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateGardenerClusterKubeconfigStatusUpdate(t *testing.T) {
	tests := []struct {
		name   string
		status clustergate.GardenerClusterKubeconfigStatus
		want   []string
	}{
		{name: "ready", status: clustergate.GardenerClusterKubeconfigStatus{State: clustergate.KubeconfigStateReady, ObservedGeneration: 1}},
		{name: "unknown state", status: clustergate.GardenerClusterKubeconfigStatus{State: "Pending"},
			want: []string{"FieldValueNotSupported status.state"}},
		{name: "observed generation negative", status: clustergate.GardenerClusterKubeconfigStatus{ObservedGeneration: -2},
			want: []string{"FieldValueInvalid status.observedGeneration"}},
		{name: "duplicate condition", status: clustergate.GardenerClusterKubeconfigStatus{Conditions: []metav1.Condition{
			{Type: "KubeconfigReady", Status: metav1.ConditionTrue, Reason: "Created", LastTransitionTime: metav1.NewTime(created)},
			{Type: "KubeconfigReady", Status: metav1.ConditionFalse, Reason: "Forbidden", LastTransitionTime: metav1.NewTime(created)},
		}}, want: []string{"FieldValueDuplicate status.conditions[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validKubeconfig()
			old.ResourceVersion = "1"
			k := old.DeepCopy()
			k.Status = tt.status
			if diff := cmp.Diff(tt.want, errorPaths(ValidateGardenerClusterKubeconfigStatusUpdate(k, old))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionLimitsValidate(t *testing.T) {
	tests := []struct {
		name    string
		policy  SessionLimits
		wantErr bool
	}{
		{name: "default", policy: DefaultSessionLimits()},
		{name: "zero minimum", policy: SessionLimits{MaxTTL: time.Hour, AccessGroups: sets.New("a")}, wantErr: true},
		{name: "maximum below minimum", policy: SessionLimits{MinTTL: time.Hour, MaxTTL: time.Minute, AccessGroups: sets.New("a")}, wantErr: true},
		{name: "no groups", policy: SessionLimits{MinTTL: time.Minute, MaxTTL: time.Hour, AccessGroups: sets.New[string]()}, wantErr: true},
		{name: "approval of an access group", policy: withPolicy(func(p *SessionLimits) { p.ApprovalGroups = sets.New("admin") })},
		{name: "lifetime at the maximum ttl", policy: withPolicy(func(p *SessionLimits) { p.MaxLifetime = p.MaxTTL })},
		{name: "lifetime below the maximum ttl", policy: withPolicy(func(p *SessionLimits) { p.MaxLifetime = p.MaxTTL - time.Second }), wantErr: true},
		{name: "approval of an unknown group", policy: withPolicy(func(p *SessionLimits) { p.ApprovalGroups = sets.New("root") }), wantErr: true},
		{name: "no approval timeout", policy: withPolicy(func(p *SessionLimits) { p.ApprovalTimeout = 0 }), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.policy.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func withPolicy(mutate func(*SessionLimits)) SessionLimits {
	p := DefaultSessionLimits()
	mutate(&p)
	return p
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
