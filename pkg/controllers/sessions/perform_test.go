// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllertest"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
)

// TestPerform: every action writes exactly the one object it names, on the
// cluster it belongs to.
func TestPerform(t *testing.T) {
	now := created.Add(time.Minute)
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	minted := credentials.NewSecret("clustergate-system", session(), map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	withKey := credentials.NewSecret("clustergate-system", session(), map[string][]byte{credentials.KeyPrivateKey: key})
	tests := []struct {
		name        string
		session     *v1alpha1.Session
		credentials *corev1.Secret
		action      Action
		// want are the writes to the server's API, the core cluster and
		// Istio; wantTarget those to the target.
		want, wantTarget []string
	}{
		{name: "add the finalizer", session: session(func(s *v1alpha1.Session) { s.Finalizers = nil }),
			action: Action{Type: AddFinalizer}, want: []string{"update sessions"}},
		{name: "delete an expired session", session: session(),
			action: Action{Type: DeleteSession}, want: []string{"delete sessions"}},
		{name: "shoot target: ask the Shoot to sign", session: session(), credentials: withKey,
			action: Action{Type: CreateCSR}, wantTarget: []string{"create certificatesigningrequests"}},
		{name: "shoot target: approve the CSR", session: session(), credentials: withKey,
			action: Action{Type: ApproveCSR}, wantTarget: []string{"update certificatesigningrequests/approval"}},
		{name: "deleted shoot session: the CSR on the Shoot", session: session(deleted),
			action: Action{Type: DeleteCSR}, wantTarget: []string{"delete certificatesigningrequests"}},
		{name: "cluster target: keep a new private key", session: session(clusterTarget),
			action: Action{Type: CreatePrivateKey}, want: []string{"create secrets"}},
		{name: "cluster target: a renewal's key joins the kubeconfig in use", session: session(clusterTarget), credentials: minted,
			action: Action{Type: CreatePrivateKey}, want: []string{"update secrets"}},
		{name: "cluster target: ask the target to sign", session: session(clusterTarget), credentials: withKey,
			action: Action{Type: CreateCSR}, wantTarget: []string{"create certificatesigningrequests"}},
		{name: "cluster target: approve the CSR", session: session(clusterTarget), credentials: withKey,
			action: Action{Type: ApproveCSR}, wantTarget: []string{"update certificatesigningrequests/approval"}},
		{name: "cluster target: keep the issued certificate", session: session(clusterTarget), credentials: withKey,
			action: Action{Type: WriteCertificate}, want: []string{"update secrets"}},
		{name: "apply the policy", session: session(), credentials: minted,
			action: Action{Type: ApplyPolicy}, want: []string{"patch authorizationpolicies"}},
		{name: "write the status", session: session(), credentials: minted,
			action: Action{Type: UpdateStatus, Conditions: conditions(credsMinted, policyApplied, sessionReady)},
			want:   []string{"update sessions/status"}},
		{name: "deleted: credentials", session: session(deleted), credentials: minted,
			action: Action{Type: DeleteCredentials}, want: []string{"delete secrets"}},
		{name: "deleted: the CSR on the target", session: session(deleted, clusterTarget),
			action: Action{Type: DeleteCSR}, wantTarget: []string{"delete certificatesigningrequests"}},
		{name: "deleted: the policy", session: session(deleted),
			action: Action{Type: DeletePolicy}, want: []string{"delete authorizationpolicies"}},
		{name: "deleted: release", session: session(deleted),
			action: Action{Type: RemoveFinalizer}, want: []string{"update sessions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPerformFixture(t, tt.session, tt.credentials, now, csr(t, key, nil))
			if err := f.controller.perform(context.Background(), f.observed, f.target, tt.action); err != nil {
				t.Fatalf("perform: %v", err)
			}
			if diff := cmp.Diff(tt.want, controllertest.Writes(f.client.Actions(), f.kube.Actions(), f.istio.Actions())); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTarget, controllertest.Writes(f.targetKube.Actions())); diff != "" {
				t.Errorf("writes to the target (-want +got):\n%s", diff)
			}
		})
	}
}

// performFixture is a controller on fake clients of clustergate, the core
// cluster, Istio and a cluster target, and what a pass observed.
type performFixture struct {
	controller       *Controller
	client           *fake.Clientset
	kube, targetKube *kubefake.Clientset
	istio            *istiofake.Clientset
	recorder         *events.FakeRecorder
	observed         Observed
	target           *target
}

// newPerformFixture serves s, credentials and, on the target, csr (or no
// CSR when nil) to a controller whose clock says now.
func newPerformFixture(t *testing.T, s *v1alpha1.Session, credentials *corev1.Secret, now time.Time,
	csr *certificatesv1.CertificateSigningRequest) performFixture {
	t.Helper()
	f := performFixture{client: fake.NewClientset(s), istio: istiofake.NewSimpleClientset(), recorder: events.NewFakeRecorder(10),
		targetKube: kubefake.NewClientset()}
	if csr != nil {
		f.targetKube = kubefake.NewClientset(csr)
	}
	// The fake has no schema for server-side apply; the patch is what
	// these tests check, not how it merges.
	f.istio.PrependReactor("patch", "authorizationpolicies", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	var core []runtime.Object
	if credentials != nil {
		core = append(core, credentials)
	}
	f.kube = kubefake.NewClientset(core...)
	f.controller = &Controller{
		opts: Options{Namespace: "clustergate-system", IstioPolicy: IstioPolicyConfig{Namespace: "clustergate-data-plane", Port: 8444},
			Access: testAccess, Config: Config{RetryAfter: 30 * time.Second}},
		client: f.client, kube: f.kube, istio: f.istio, clock: clocktesting.NewFakeClock(now),
		recorder: f.recorder, gardenerFailures: controllerutil.NewFailures(), bindingFailures: controllerutil.NewFailures(),
	}
	f.observed = Observed{Session: s, Credentials: credentials, CSR: csr, Level: levelOf(s), Now: now}
	f.target = &target{kube: f.targetKube, server: "https://127.0.0.1:6443", ca: []byte("ca")}
	return f
}

// TestPerformClusterCertificate: the CSR asks for as long as the session
// has left, 10 minutes at least, and a renewal's certificate replaces key
// and kubeconfig and says so.
func TestPerformClusterCertificate(t *testing.T) {
	now := created.Add(time.Minute)
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	expiringIn := func(d time.Duration) *v1alpha1.Session {
		return session(clusterTarget, func(s *v1alpha1.Session) { s.Status.ExpiresAt = &metav1.Time{Time: now.Add(d)} })
	}
	for _, tt := range []struct {
		name    string
		session *v1alpha1.Session
		seconds int32
	}{
		{"as long as the session has left", expiringIn(59*time.Minute + 500*time.Millisecond), 3541},
		{"10 minutes at least", expiringIn(3 * time.Minute), 600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withKey := credentials.NewSecret("clustergate-system", tt.session, map[string][]byte{credentials.KeyPrivateKey: key})
			f := newPerformFixture(t, tt.session, withKey, now, nil)
			if err := f.controller.perform(context.Background(), f.observed, f.target, Action{Type: CreateCSR}); err != nil {
				t.Fatal(err)
			}
			got, err := f.targetKube.CertificatesV1().CertificateSigningRequests().Get(context.Background(), credentials.CSRName(tt.session.UID), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.ExpirationSeconds == nil || *got.Spec.ExpirationSeconds != tt.seconds {
				t.Errorf("expirationSeconds = %v, want %d", got.Spec.ExpirationSeconds, tt.seconds)
			}
		})
	}

	t.Run("a renewal's certificate replaces key and kubeconfig", func(t *testing.T) {
		s := session(clusterTarget)
		renewedUntil := created.Add(time.Hour)
		issued := csr(t, key, issue(t, key, "clustergate:session:alice", clusterGroups, renewedUntil), certificatesv1.CertificateApproved)
		inUse, err := credentials.ClientKubeconfig("https://127.0.0.1:6443", []byte("ca"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		renewing := credentials.NewSecret("clustergate-system", s, map[string][]byte{credentials.KeyKubeconfig: inUse, credentials.KeyPrivateKey: key})
		f := newPerformFixture(t, s, renewing, now, issued)
		if err := f.controller.perform(context.Background(), f.observed, f.target, Action{Type: WriteCertificate}); err != nil {
			t.Fatal(err)
		}
		written, err := f.kube.CoreV1().Secrets("clustergate-system").Get(context.Background(), renewing.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, notAfter := credentials.Validity(written.Data[credentials.KeyKubeconfig]); len(written.Data) != 1 || !notAfter.Equal(renewedUntil) {
			t.Errorf("Secret data keys %v, kubeconfig's certificate until %s; want the kubeconfig alone, until %s", slices.Sorted(maps.Keys(written.Data)), notAfter, renewedUntil)
		}
		if event := <-f.recorder.Events; !strings.Contains(event, "Client certificate renewed by kubernetes.io/kube-apiserver-client, valid until 2026-11-30T11:00:00Z") {
			t.Errorf("event %q", event)
		}
	})
}
