// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// scopedSession is a session of level ops-lead (ClusterRole edit) on a
// cluster target, scoped to web and db.
func scopedSession(mutate ...func(*v1alpha1.Session)) *v1alpha1.Session {
	return session(append([]func(*v1alpha1.Session){clusterTarget, scoped("web", "db"),
		func(s *v1alpha1.Session) { s.Spec.AccessLevel.Group = "ops-lead" }}, mutate...)...)
}

// roleBinding is a binding on the target as the server makes it for s in
// namespace, of role.
func roleBinding(s *v1alpha1.Session, namespace, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: BindingName(s), Namespace: namespace, Labels: BindingLabels(s), UID: types.UID("rb-" + namespace + "-" + string(s.UID))},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: SessionGroup(s)}},
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

var editRole = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}}

func binding(namespace string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: "clustergate-session.sre.fix-etcd"}
}

// TestBindingNameAndLabels: what the target's admins see, and what the
// end-to-end test looks for.
func TestBindingNameAndLabels(t *testing.T) {
	s := scopedSession()
	if got := BindingName(s); got != "clustergate-session.sre.fix-etcd" {
		t.Errorf("name %q", got)
	}
	want := map[string]string{"app.kubernetes.io/managed-by": "clustergate", "clustergate.dev/session-namespace": "sre",
		"clustergate.dev/session-name": "fix-etcd", "clustergate.dev/session-uid": "uid-1"}
	if diff := cmp.Diff(want, BindingLabels(s)); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// TestNextActionScoped: a scoped session's bindings are made, one per pass,
// before it is Ready; what holds them up is ScopeReady's and Ready's reason;
// stale ones go first; when the session ends they go before its
// credentials, and a target that cannot be reached holds that up for a
// bounded time only.
func TestNextActionScoped(t *testing.T) {
	now := created.Add(time.Minute)
	untilExpiry := 59 * time.Minute
	minted := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	policy := PolicyState{Exists: true, Owned: true, UpToDate: true}
	current := func(ns ...string) BindingsState {
		b := BindingsState{Observed: true}
		for _, n := range ns {
			b.Current = append(b.Current, binding(n))
		}
		return b
	}
	scopeFalse := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.SessionConditionScopeReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	bound := metav1.Condition{Type: v1alpha1.SessionConditionScopeReady, Status: metav1.ConditionTrue, Reason: v1alpha1.SessionReasonBound,
		Message: "ClusterRole edit is bound to group clustergate:session-name:sre/fix-etcd in namespaces web, db of the target"}
	noNamespace := scopeFalse(v1alpha1.SessionReasonNamespaceNotFound, "namespaces of the session's scope do not exist on the target: db")
	withScope := func(creds, ready, scope metav1.Condition) []metav1.Condition {
		out := conditions(creds, policyApplied, ready)
		scope.ObservedGeneration = 1
		return append(out, scope)
	}
	recordedBound := func(s *v1alpha1.Session) {
		s.Status.BackendURL, s.Status.ObservedGeneration = "https://127.0.0.1:6443", 1
		s.Status.Conditions = withScope(credsMinted, sessionReady, bound)
	}
	deletedAgo := func(d time.Duration) func(*v1alpha1.Session) {
		return func(s *v1alpha1.Session) { s.DeletionTimestamp = &metav1.Time{Time: now.Add(-d)} }
	}
	unreachable := &TargetProblem{Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "dial tcp: connection refused"}
	cleanup := Config{RetryAfter: 30 * time.Second, BindingCleanupTimeout: 10 * time.Minute}

	tests := []struct {
		name   string
		obs    Observed
		expect Action
	}{
		{name: "minted, no binding yet: the first namespace's",
			obs:    Observed{Session: scopedSession(), Credentials: minted, Policy: policy, Bindings: current()},
			expect: Action{Type: ApplyBinding, Binding: binding("web")}},
		{name: "one made: the next",
			obs:    Observed{Session: scopedSession(), Credentials: minted, Policy: policy, Bindings: current("web")},
			expect: Action{Type: ApplyBinding, Binding: binding("db")}},
		{name: "all made: Ready",
			obs: Observed{Session: scopedSession(), Credentials: minted, Policy: policy, Bindings: current("web", "db")},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: untilExpiry,
				Conditions: withScope(credsMinted, sessionReady, bound)}},
		{name: "Bound and Ready: the target is not asked again, nothing to do",
			obs:    Observed{Session: scopedSession(recordedBound), Credentials: minted, Policy: policy},
			expect: Action{Type: None, RequeueAfter: untilExpiry}},
		{name: "a namespace missing: not Ready, said why, retried",
			obs: Observed{Session: scopedSession(), Credentials: minted, Policy: policy,
				Bindings: BindingsState{Observed: true, Current: []types.NamespacedName{binding("web")}, Problem: &TargetProblem{Reason: noNamespace.Reason, Message: noNamespace.Message}}},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: cfg.RetryAfter,
				Conditions: withScope(credsMinted, notReady(noNamespace), noNamespace)}},
		{name: "a failed apply: retried at its backoff",
			obs: Observed{Session: scopedSession(), Credentials: minted, Policy: policy,
				Bindings: BindingsState{Observed: true, Problem: &TargetProblem{Reason: v1alpha1.SessionReasonTargetForbidden, Message: "binding: forbidden"}, RetryAt: created.Add(time.Minute + 4*time.Second)}},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: 4 * time.Second,
				Conditions: withScope(credsMinted, notReady(scopeFalse(v1alpha1.SessionReasonTargetForbidden, "binding: forbidden")),
					scopeFalse(v1alpha1.SessionReasonTargetForbidden, "binding: forbidden"))}},
		{name: "the target cannot be reached for the bindings: not Ready, retried",
			obs: Observed{Session: scopedSession(), Credentials: minted, Policy: policy, Target: unreachable},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: cfg.RetryAfter,
				Conditions: withScope(credsMinted, notReady(scopeFalse(unreachable.Reason, unreachable.Message)), scopeFalse(unreachable.Reason, unreachable.Message))}},
		{name: "a binding of an older session of the name: removed first",
			obs: Observed{Session: scopedSession(), Credentials: minted, Policy: policy,
				Bindings: BindingsState{Observed: true, Current: []types.NamespacedName{binding("web")}, Stale: []types.NamespacedName{binding("kube-system")}}},
			expect: Action{Type: DeleteBinding, Binding: binding("kube-system")}},
		{name: "an unscoped session: an older session's binding goes before its certificate is asked for",
			obs:    Observed{Session: session(clusterTarget), Bindings: BindingsState{Observed: true, Stale: []types.NamespacedName{binding("web")}}},
			expect: Action{Type: DeleteBinding, Binding: binding("web")}},
		{name: "an unscoped session has no ScopeReady",
			obs: Observed{Session: session(clusterTarget), Credentials: minted, Policy: policy, Bindings: BindingsState{Observed: true}},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: untilExpiry,
				Conditions: conditions(credsMinted, policyApplied, sessionReady)}},
		{name: "expired: deleted (its bindings go with its cleanup)",
			obs:    Observed{Session: scopedSession(recordedBound), Credentials: minted, Policy: policy, Now: created.Add(time.Hour)},
			expect: Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonExpired, Message: "Session expired at 2026-11-30T11:00:00Z"}},
		{name: "deleted: the bindings go before the credentials",
			obs:    Observed{Session: scopedSession(deletedAgo(0)), Credentials: minted, Policy: policy, Bindings: BindingsState{Observed: true, Stale: []types.NamespacedName{binding("web"), binding("db")}}},
			expect: Action{Type: DeleteBinding, Binding: binding("web")}},
		{name: "deleted, bindings gone: the credentials",
			obs:    Observed{Session: scopedSession(deletedAgo(0)), Credentials: minted, Policy: policy, Bindings: BindingsState{Observed: true}},
			expect: Action{Type: DeleteCredentials}},
		{name: "deleted, the target unreachable: the credentials wait",
			obs:    Observed{Session: scopedSession(deletedAgo(time.Minute)), Credentials: minted, Policy: policy, Target: unreachable},
			expect: Action{Type: None, RequeueAfter: 30 * time.Second}},
		{name: "deleted, the target unreachable for longer than the bound: the credentials go, the bindings are the sweep's",
			obs:    Observed{Session: scopedSession(deletedAgo(10 * time.Minute)), Credentials: minted, Policy: policy, Target: unreachable},
			expect: Action{Type: DeleteCredentials}},
		{name: "deleted, the target gone for good: no wait",
			obs: Observed{Session: scopedSession(deletedAgo(0)), Credentials: minted, Policy: policy,
				Target: &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: "kubeconfig Secret clustergate-system/mc-1 not found"}},
			expect: Action{Type: DeleteCredentials}},
		{name: "idle: the bindings go before the credentials",
			obs: Observed{Session: scopedSession(recordedBound, func(s *v1alpha1.Session) {
				s.Status.Conditions[2] = metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonIdle, Message: "idle"}
			}), Credentials: minted, Policy: policy, Bindings: current("web", "db")},
			expect: Action{Type: DeleteBinding, Binding: binding("web")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.obs.Now.IsZero() {
				tt.obs.Now = now
			}
			if diff := cmp.Diff(tt.expect, NextAction(withLevel(tt.obs), cleanup)); diff != "" {
				t.Errorf("action (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObserveBindings: the bindings of the session's name on the target,
// sorted into its own and those that must go, and what keeps the missing
// ones from being made.
func TestObserveBindings(t *testing.T) {
	s := scopedSession()
	older := scopedSession(func(s *v1alpha1.Session) { s.UID = "uid-0" })
	forbidden := apierrors.NewForbidden(rbacv1.Resource("rolebindings"), "", errors.New("no"))
	tests := []struct {
		name     string
		session  *v1alpha1.Session
		objects  []runtime.Object
		listErr  error
		failed   bool
		want     BindingsState
		wantMsg  string
		wantGets []string
	}{
		{name: "all made: the target is asked for nothing else",
			session: s, objects: []runtime.Object{roleBinding(s, "web", "edit"), roleBinding(s, "db", "edit")},
			want: BindingsState{Observed: true, Current: []types.NamespacedName{binding("db"), binding("web")}}},
		{name: "an older session's, one out of scope, one of another role: stale",
			session: s, objects: []runtime.Object{roleBinding(older, "web", "edit"), roleBinding(s, "kube-system", "edit"), roleBinding(s, "db", "admin"),
				editRole, namespace("web"), namespace("db")},
			want:     BindingsState{Observed: true, Stale: []types.NamespacedName{binding("db"), binding("kube-system"), binding("web")}},
			wantGets: []string{"clusterroles", "namespaces", "namespaces"}},
		{name: "a namespace missing",
			session: s, objects: []runtime.Object{editRole, namespace("web")},
			want:    BindingsState{Observed: true, Problem: &TargetProblem{Reason: v1alpha1.SessionReasonNamespaceNotFound}},
			wantMsg: "namespaces of the session's scope do not exist on the target: db", wantGets: []string{"clusterroles", "namespaces", "namespaces"}},
		{name: "the ClusterRole missing",
			session: s, objects: []runtime.Object{namespace("web"), namespace("db")},
			want:    BindingsState{Observed: true, Problem: &TargetProblem{Reason: v1alpha1.SessionReasonClusterRoleNotFound}},
			wantMsg: "ClusterRole edit of access level ops-lead does not exist on the target", wantGets: []string{"clusterroles"}},
		{name: "the target forbids listing bindings",
			session: s, listErr: forbidden,
			want:    BindingsState{Observed: true, Problem: &TargetProblem{Reason: v1alpha1.SessionReasonTargetForbidden}},
			wantMsg: "forbidden"},
		{name: "an unscoped session on a target that forbids listing: nothing known, nothing held up",
			session: session(clusterTarget), listErr: forbidden, want: BindingsState{}},
		{name: "the last apply failed: reported until its backoff ends, without asking",
			session: s, objects: []runtime.Object{editRole, namespace("web"), namespace("db")}, failed: true,
			want:    BindingsState{Observed: true, Problem: &TargetProblem{Reason: v1alpha1.SessionReasonTargetForbidden}, RetryAt: created.Add(time.Second)},
			wantMsg: "binding ClusterRole edit in namespace web: forbidden"},
		{name: "idle: its bindings are found to be removed, nothing else asked",
			session: scopedSession(func(s *v1alpha1.Session) {
				s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonIdle}}
			}),
			objects: []runtime.Object{roleBinding(s, "web", "edit")},
			want:    BindingsState{Observed: true, Current: []types.NamespacedName{binding("web")}}},
		{name: "deleted: every binding of the name is stale, nothing else asked",
			session: scopedSession(deleted), objects: []runtime.Object{roleBinding(s, "web", "edit"), roleBinding(older, "db", "edit")},
			want: BindingsState{Observed: true, Stale: []types.NamespacedName{binding("db"), binding("web")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPerformFixture(t, tt.session, nil, created, nil)
			f.targetKube = kubefake.NewClientset(tt.objects...)
			f.target.kube = f.targetKube
			if tt.listErr != nil {
				f.targetKube.PrependReactor("list", "rolebindings", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.listErr })
			}
			if tt.failed {
				f.controller.bindingFailures.Record(tt.session.UID, v1alpha1.SessionReasonTargetForbidden, "binding ClusterRole edit in namespace web: forbidden", created)
			}
			got := f.controller.observeBindings(context.Background(), f.target, tt.session, levelOf(tt.session), created)
			var msg string
			if got.Problem != nil {
				msg, got.Problem.Message = got.Problem.Message, ""
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q, want it to say %q", msg, tt.wantMsg)
			}
			var gets []string
			for _, a := range f.targetKube.Actions() {
				if a.GetVerb() == "get" {
					gets = append(gets, a.GetResource().Resource)
				}
			}
			if diff := cmp.Diff(tt.wantGets, gets); diff != "" {
				t.Errorf("gets (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScopedSessionLifecycle drives a scoped session's passes against a
// fake target: every binding exists, as the server makes it, when Ready is
// first written; when the session is deleted every binding is gone before
// its credentials are.
func TestScopedSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	now := created.Add(time.Minute)
	s := scopedSession()
	minted := credentials.NewSecret("clustergate-system", s, map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	f := newPerformFixture(t, s, minted, now, nil)
	f.targetKube = kubefake.NewClientset(editRole, namespace("web"), namespace("db"))
	f.target.kube = f.targetKube
	policy := PolicyState{Exists: true, Owned: true, UpToDate: true}
	// pass observes the session as the controller would and performs its
	// next action, returning it.
	pass := func(s *v1alpha1.Session) Action {
		t.Helper()
		o := Observed{Session: s, Policy: policy, Level: levelOf(s), Now: now}
		if secret, err := f.kube.CoreV1().Secrets("clustergate-system").Get(ctx, minted.Name, metav1.GetOptions{}); err == nil {
			o.Credentials = secret
		}
		o.Bindings = f.controller.observeBindings(ctx, f.target, s, o.Level, now)
		a := NextAction(o, cfg)
		if err := f.controller.perform(ctx, o, f.target, a); err != nil {
			t.Fatalf("%s: %v", a.Type, err)
		}
		return a
	}
	bindings := func() []rbacv1.RoleBinding {
		list, err := f.targetKube.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}

	var actions []ActionType
	for a := pass(s); a.Type != UpdateStatus; a = pass(s) {
		actions = append(actions, a.Type)
		if len(actions) > 5 {
			t.Fatalf("no status after %v", actions)
		}
	}
	if diff := cmp.Diff([]ActionType{ApplyBinding, ApplyBinding}, actions); diff != "" {
		t.Errorf("actions before Ready (-want +got):\n%s", diff)
	}
	made := bindings()
	if len(made) != 2 {
		t.Fatalf("bindings when Ready: %v", made)
	}
	for _, b := range made {
		want := roleBinding(s, b.Namespace, "edit")
		if b.Name != want.Name || !cmp.Equal(b.Labels, want.Labels) || b.RoleRef != want.RoleRef || !cmp.Equal(b.Subjects, want.Subjects) {
			t.Errorf("binding %s/%s: %+v, want %+v", b.Namespace, b.Name, b, want)
		}
	}

	deleting := scopedSession(deleted)
	actions = nil
	for a := pass(deleting); a.Type != DeletePolicy && a.Type != RemoveFinalizer; a = pass(deleting) {
		actions = append(actions, a.Type)
		if a.Type == DeleteCredentials && len(bindings()) > 0 {
			t.Errorf("credentials deleted while bindings are left: %v", bindings())
		}
		if len(actions) > 5 {
			t.Fatalf("cleanup does not end: %v", actions)
		}
	}
	if diff := cmp.Diff([]ActionType{DeleteBinding, DeleteBinding, DeleteCredentials}, actions); diff != "" {
		t.Errorf("cleanup (-want +got):\n%s", diff)
	}
}

// TestApplyBindingFailure: a refused apply is remembered, not an error that
// retries at once, and says what was refused.
func TestApplyBindingFailure(t *testing.T) {
	s := scopedSession()
	f := newPerformFixture(t, s, nil, created, nil)
	f.targetKube.PrependReactor("patch", "rolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(rbacv1.Resource("rolebindings"), BindingName(s), errors.New("cannot bind ClusterRole edit"))
	})
	if err := f.controller.perform(context.Background(), f.observed, f.target, Action{Type: ApplyBinding, Binding: binding("web")}); err != nil {
		t.Fatal(err)
	}
	got, ok := f.controller.bindingFailures.Get(s.UID)
	if !ok || got.Reason != v1alpha1.SessionReasonTargetForbidden || !strings.Contains(got.Message, "binding ClusterRole edit in namespace web") {
		t.Errorf("failure %+v", got)
	}
}

// TestScopeEvents: a change of ScopeReady is an event on the Session, a
// warning when something holds the bindings up; the plain progress of
// Binding is none, and an unchanged condition is not repeated.
func TestScopeEvents(t *testing.T) {
	scope := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.SessionConditionScopeReady, Status: status, Reason: reason, Message: msg}
	}
	missing := scope(metav1.ConditionFalse, v1alpha1.SessionReasonNamespaceNotFound, "namespaces of the session's scope do not exist on the target: db")
	for _, tt := range []struct {
		name    string
		was     []metav1.Condition
		written metav1.Condition
		want    string
	}{
		{name: "a namespace missing: a warning", written: missing,
			want: "Warning NamespaceNotFound namespaces of the session's scope do not exist on the target: db"},
		{name: "bound", written: scope(metav1.ConditionTrue, v1alpha1.SessionReasonBound, "ClusterRole edit is bound"),
			want: "Normal Bound ClusterRole edit is bound"},
		{name: "binding: no event", written: scope(metav1.ConditionFalse, v1alpha1.SessionReasonBinding, "binding")},
		{name: "unchanged: no event", was: []metav1.Condition{missing}, written: missing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := scopedSession(func(s *v1alpha1.Session) { s.Status.Conditions = tt.was })
			f := newPerformFixture(t, s, nil, created, nil)
			f.controller.recordScope(s, []metav1.Condition{tt.written})
			var got string
			select {
			case got = <-f.recorder.Events:
			default:
			}
			if got != tt.want {
				t.Errorf("event %q, want %q", got, tt.want)
			}
		})
	}
}
