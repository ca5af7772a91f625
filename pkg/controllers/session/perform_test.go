package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllertest"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
)

// TestPerform: every action writes exactly the one object it names, on the
// cluster it belongs to, and a failed mint writes nothing and is remembered
// for the next pass instead.
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
		gardener    gardener.Requester
		action      Action
		// want are the writes to the server's API, the core cluster and
		// Istio; wantTarget those to the target.
		want, wantTarget []string
		// failure is the reason remembered for the next pass, if any.
		failure string
	}{
		{name: "add the finalizer", session: session(func(s *v1alpha1.Session) { s.Finalizers = nil }),
			action: Action{Type: AddFinalizer}, want: []string{"update sessions"}},
		{name: "delete an expired session", session: session(),
			action: Action{Type: DeleteSession}, want: []string{"delete sessions"}},
		{name: "mint a shoot's credentials", session: session(),
			gardener: controllertest.Gardener{Kubeconfig: gardener.Kubeconfig{Data: []byte(shootKubeconfig), ExpiresAt: now.Add(time.Hour)}},
			action:   Action{Type: MintShootCredentials}, want: []string{"create secrets"}},
		{name: "Gardener fails: nothing written, the failure remembered", session: session(),
			gardener: controllertest.Gardener{Err: &gardener.Error{Reason: gardener.Forbidden, Err: errors.New("403")}},
			action:   Action{Type: MintShootCredentials}, failure: v1alpha1.SessionReasonTargetForbidden},
		{name: "Gardener's kubeconfig does not verify TLS: refused, remembered", session: session(),
			gardener: controllertest.Gardener{Kubeconfig: gardener.Kubeconfig{Data: []byte("apiVersion: v1\nkind: Config\n")}},
			action:   Action{Type: MintShootCredentials}, failure: v1alpha1.SessionReasonTargetInsecure},
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
			want:   []string{"patch sessions/status"}},
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
			client := fake.NewClientset(tt.session)
			// The fakes have no schema for server-side apply; the patch is
			// what this test checks, not how it merges.
			client.PrependReactor("patch", "sessions", func(clienttesting.Action) (bool, runtime.Object, error) { return true, tt.session, nil })
			var core []runtime.Object
			if tt.credentials != nil {
				core = append(core, tt.credentials)
			}
			kube := kubefake.NewClientset(core...)
			istio := istiofake.NewSimpleClientset()
			istio.PrependReactor("patch", "authorizationpolicies", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			targetKube := kubefake.NewClientset(csr(t, key, nil))
			c := &Controller{
				opts:   Options{Namespace: "clustergate-system", Policy: PolicyConfig{Namespace: "clustergate-system", PrincipalFormat: "{username}"}},
				client: client, kube: kube, istio: istio, gardener: tt.gardener, clock: clocktesting.NewFakeClock(now),
				recorder: events.NewFakeRecorder(10), mintFailures: controllerutil.NewFailures(),
			}
			o := Observed{Session: tt.session, Credentials: tt.credentials, CSR: csr(t, key, nil), Now: now}
			if err := c.perform(context.Background(), o, &target{kube: targetKube, server: "https://127.0.0.1:6443", ca: []byte("ca")}, tt.action); err != nil {
				t.Fatalf("perform: %v", err)
			}
			if diff := cmp.Diff(tt.want, controllertest.Writes(client.Actions(), kube.Actions(), istio.Actions())); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTarget, controllertest.Writes(targetKube.Actions())); diff != "" {
				t.Errorf("writes to the target (-want +got):\n%s", diff)
			}
			f, failed := c.mintFailures.Get(tt.session.UID)
			if failed != (tt.failure != "") || f.Reason != tt.failure {
				t.Errorf("remembered failure = %+v (%v), want %q", f, failed, tt.failure)
			}
		})
	}
}
