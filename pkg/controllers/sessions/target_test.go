// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

func TestIsClusterTarget(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "marked", labels: map[string]string{v1alpha1.LabelClusterTarget: "true"}, want: true},
		{name: "unmarked"},
		{name: "marked with another value", labels: map[string]string{v1alpha1.LabelClusterTarget: "yes"}},
		{name: "a session's credentials, marked by someone",
			labels: map[string]string{v1alpha1.LabelClusterTarget: "true", credentials.LabelSessionName: "other", credentials.LabelSessionNamespace: "sre"}},
		{name: "a kept Gardener kubeconfig, marked by someone",
			labels: map[string]string{v1alpha1.LabelClusterTarget: "true", v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate}},
		{name: "Kyma's kubeconfig, marked by someone",
			labels: map[string]string{v1alpha1.LabelClusterTarget: "true", v1alpha1.LabelManagedBy: v1alpha1.ManagedByKyma}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mc-1", Labels: tt.labels}}
			if got := isClusterTarget(s); got != tt.want {
				t.Errorf("isClusterTarget = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReachTarget: a cluster target comes from the cache of marked Secrets;
// only a session that does not yet say why its target is missing asks the
// core cluster, once, which it is.
func TestReachTarget(t *testing.T) {
	marked := map[string]string{v1alpha1.LabelClusterTarget: "true"}
	ca, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := strings.Replace(shootKubeconfig, "Zm9v", base64.StdEncoding.EncodeToString(ca), 1)
	secret := func(labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mc-1", Namespace: "clustergate-system", Labels: labels},
			Data: map[string][]byte{"kubeconfig": []byte(kubeconfig)}}
	}
	saying := func(reason string) func(*v1alpha1.Session) {
		return func(s *v1alpha1.Session) {
			s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: reason, Message: "said before"}}
		}
	}
	tests := []struct {
		name    string
		session *v1alpha1.Session
		// cached is in the target cache; core in the core cluster.
		cached, core *corev1.Secret
		coreErr      error
		wantReason   string // "" when the target is reached
		wantAsked    []string
	}{
		{name: "marked: reached from the cache", session: session(clusterTarget), cached: secret(marked)},
		{name: "marked but the server's own credentials: refused from the cache", session: session(clusterTarget),
			cached:     secret(map[string]string{v1alpha1.LabelClusterTarget: "true", credentials.LabelSessionName: "other"}),
			wantReason: v1alpha1.SessionReasonTargetNotMarked},
		{name: "missing: asked once", session: session(clusterTarget),
			wantReason: v1alpha1.SessionReasonTargetNotFound, wantAsked: []string{"get secrets"}},
		{name: "unmarked: asked once", session: session(clusterTarget), core: secret(nil),
			wantReason: v1alpha1.SessionReasonTargetNotMarked, wantAsked: []string{"get secrets"}},
		{name: "the session already says it is missing: not asked again", session: session(clusterTarget, saying(v1alpha1.SessionReasonTargetNotFound)),
			core: secret(nil), wantReason: v1alpha1.SessionReasonTargetNotFound},
		{name: "the session already says it is unmarked: not asked again", session: session(clusterTarget, saying(v1alpha1.SessionReasonTargetNotMarked)),
			wantReason: v1alpha1.SessionReasonTargetNotMarked},
		{name: "the session said it was unreachable: asked", session: session(clusterTarget, saying(v1alpha1.SessionReasonTargetUnreachable)),
			wantReason: v1alpha1.SessionReasonTargetNotFound, wantAsked: []string{"get secrets"}},
		{name: "the session says its certificate expired unrenewed: asked, the message is not carried over", session: session(clusterTarget, saying(v1alpha1.SessionReasonCertificateInvalid)),
			wantReason: v1alpha1.SessionReasonTargetNotFound, wantAsked: []string{"get secrets"}},
		{name: "the core cluster forbids: forbidden", session: session(clusterTarget),
			coreErr:    apierrors.NewForbidden(corev1.Resource("secrets"), "mc-1", errors.New("no")),
			wantReason: v1alpha1.SessionReasonTargetForbidden, wantAsked: []string{"get secrets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var core []runtime.Object
			if tt.core != nil {
				core = append(core, tt.core)
			}
			kube := kubefake.NewClientset(core...)
			if tt.coreErr != nil {
				kube.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.coreErr })
			}
			targets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tt.cached != nil {
				if err := targets.Add(tt.cached); err != nil {
					t.Fatal(err)
				}
			}
			c := &Controller{opts: Options{Namespace: "clustergate-system"}, kube: kube, targets: corelisters.NewSecretLister(targets)}

			target, problem := c.reachTarget(context.Background(), tt.session)
			switch {
			case tt.wantReason == "" && (target == nil || problem != nil):
				t.Errorf("target not reached: %+v", problem)
			case tt.wantReason != "" && (problem == nil || problem.Reason != tt.wantReason):
				t.Errorf("problem = %+v, want reason %s", problem, tt.wantReason)
			}
			if problem != nil && isUnmarked(problem.Reason) && problem.Message != "said before" && !strings.Contains(problem.Message, v1alpha1.LabelClusterTarget+"=true") {
				t.Errorf("the message does not name the mark: %s", problem.Message)
			}
			var asked []string
			for _, a := range kube.Actions() {
				asked = append(asked, a.GetVerb()+" "+a.GetResource().Resource)
			}
			if diff := cmp.Diff(tt.wantAsked, asked); diff != "" {
				t.Errorf("requests to the core cluster (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSessionsNaming: a marked Secret's change queues exactly the sessions
// whose cluster target it is.
func TestSessionsNaming(t *testing.T) {
	named := func(namespace, name, target string) *v1alpha1.Session {
		return session(clusterTarget, func(s *v1alpha1.Session) {
			s.Namespace, s.Name = namespace, name
			s.Spec.Target.Cluster.KubeconfigSecretRef.Name = target
		})
	}
	sessions := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*v1alpha1.Session{named("sre", "a", "mc-1"), named("dev", "b", "mc-1"), named("sre", "c", "mc-2"), session()} {
		if err := sessions.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{opts: Options{Namespace: "clustergate-system"}, sessions: listers.NewSessionLister(sessions)}
	tests := []struct {
		name   string
		secret any
		want   []types.NamespacedName
	}{
		{name: "the target of two", secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mc-1", Namespace: "clustergate-system"}},
			want: []types.NamespacedName{{Namespace: "dev", Name: "b"}, {Namespace: "sre", Name: "a"}}},
		{name: "nobody's target", secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mc-3", Namespace: "clustergate-system"}}},
		{name: "same name in another namespace", secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mc-1", Namespace: "sre"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.sessionsNaming(tt.secret)
			slices.SortFunc(got, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTargetProblemReasons: what a failed request to a target says in
// the session's conditions.
func TestTargetProblemReasons(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{apierrors.NewForbidden(schema.GroupResource{Resource: "certificatesigningrequests"}, "x", errors.New("no")), v1alpha1.SessionReasonTargetForbidden},
		{apierrors.NewUnauthorized("expired token"), v1alpha1.SessionReasonTargetForbidden},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), v1alpha1.SessionReasonTargetUnreachable},
		{apierrors.NewInternalError(errors.New("etcd")), v1alpha1.SessionReasonTargetUnreachable},
	}
	for _, tt := range tests {
		if got := targetProblem(tt.err).Reason; got != tt.want {
			t.Errorf("targetProblem(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
