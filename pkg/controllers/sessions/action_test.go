// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

var (
	created = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cfg     = Config{CSRPoll: 2 * time.Second, RetryAfter: 30 * time.Second}
)

const shootKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Zm9v}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// sessionGroup is the group that names session(), and clusterGroups the
// groups of its certificate on a cluster target.
const sessionGroup = "clustergate:session-name:sre/fix-etcd"

var clusterGroups = []string{"viewer", sessionGroup}

// testAccess are the access levels of the tests: admin and viewer as
// --session-access-groups gives them, breakglass of that flag too, a level
// whose group is not its name and one that is scoped only.
var testAccess = func() *sessionaccess.Configuration {
	c := sessionaccess.FromGroups([]string{"admin", "viewer", "breakglass"})
	c.Levels = append(c.Levels,
		sessionaccess.Level{Name: "ops-lead", Group: "ops-leads", NamespacedClusterRole: "edit"},
		sessionaccess.Level{Name: "debugger", NamespacedClusterRole: "clustergate:debugger"})
	return c
}()

// levelOf is the session's level in testAccess, nil when it has none.
func levelOf(s *v1alpha1.Session) *sessionaccess.Level {
	if l, ok := testAccess.Level(s.Spec.AccessLevel.Group); ok {
		return &l
	}
	return nil
}

// withLevel fills in the level an observation of the controller would
// find in testAccess.
func withLevel(o Observed) Observed {
	if o.Level == nil {
		o.Level = levelOf(o.Session)
	}
	return o
}

// scoped scopes a session to namespaces.
func scoped(namespaces ...string) func(*v1alpha1.Session) {
	return func(s *v1alpha1.Session) { s.Spec.Scope = &v1alpha1.SessionScope{Namespaces: namespaces} }
}

func session(mutate ...func(*v1alpha1.Session)) *v1alpha1.Session {
	expires := metav1.NewTime(created.Add(time.Hour))
	s := &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: "fix-etcd", Namespace: "sre", UID: "uid-1", Generation: 1,
			CreationTimestamp: metav1.NewTime(created), Finalizers: []string{v1alpha1.SessionFinalizer}},
		Spec: v1alpha1.SessionSpec{
			TTL:         metav1.Duration{Duration: time.Hour},
			Owner:       v1alpha1.SessionOwner{Username: "alice"},
			AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
			Target:      v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "local"}},
		},
		Status: v1alpha1.SessionStatus{ExpiresAt: &expires},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func clusterTarget(s *v1alpha1.Session) {
	s.Spec.Target = v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{
		KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: "mc-1"}, SignerName: "kubernetes.io/kube-apiserver-client"}}
}

func credentialsSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "session-uid-1", Namespace: "clustergate-system"}, Data: data}
}

// csr is the session's CSR for keyPEM, with the certificate and conditions
// given.
func csr(t *testing.T, keyPEM, certificate []byte, conditions ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	request, err := credentials.CertificateRequest(keyPEM, "clustergate:session:alice", []string{"viewer"})
	if err != nil {
		t.Fatal(err)
	}
	c := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "clustergate-session-uid-1"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kube-apiserver-client", Request: request},
		Status:     certificatesv1.CertificateSigningRequestStatus{Certificate: certificate},
	}
	for _, t := range conditions {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return c
}

// issue signs a certificate for key with the given subject, as a signer would.
func issue(t *testing.T, keyPEM []byte, cn string, orgs []string, notAfter time.Time) []byte {
	t.Helper()
	key, err := credentials.ParsePrivateKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: created.Add(-time.Minute), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "ca"}}, key.Public(), ca)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func conditions(credentials, policy, ready metav1.Condition) []metav1.Condition {
	out := []metav1.Condition{credentials, policy, ready}
	for i := range out {
		out[i].ObservedGeneration = 1
	}
	return out
}

var (
	credsMinted   = metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionTrue, Reason: v1alpha1.SessionReasonMinted, Message: "credentials minted and kept by the server"}
	policyApplied = metav1.Condition{Type: v1alpha1.SessionConditionAuthorizationPolicyReady, Status: metav1.ConditionTrue, Reason: v1alpha1.SessionReasonPolicyApplied, Message: "only the owner may use the session's direct path"}
	policyAbsent  = metav1.Condition{Type: v1alpha1.SessionConditionAuthorizationPolicyReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonIstioNotInstalled,
		Message: "Istio's AuthorizationPolicy API is not served; the session works through the aggregated proxy only"}
	sessionReady = metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "SessionReady", Message: "the session's proxy may be used by its owner until it expires"}
)

func notReady(c metav1.Condition) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: c.Status, Reason: c.Reason, Message: c.Message}
}

func TestNextAction(t *testing.T) {
	clock := clocktesting.NewFakeClock(created.Add(time.Minute))
	untilExpiry := 59 * time.Minute
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	good := issue(t, key, "clustergate:session:alice", clusterGroups, created.Add(2*time.Hour))
	wrongGroup := issue(t, key, "clustergate:session:alice", []string{"admin", sessionGroup}, created.Add(2*time.Hour))
	expired := issue(t, key, "clustergate:session:alice", clusterGroups, created)
	minted := credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: []byte(shootKubeconfig)})
	// A cluster target's certificate that ends half an hour before the
	// session, as after an extension, and its renewal for a new key.
	short := issue(t, key, "clustergate:session:alice", clusterGroups, created.Add(30*time.Minute))
	renewAt := created.Add(29 * time.Minute)
	newKey, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	renewed := issue(t, newKey, "clustergate:session:alice", clusterGroups, created.Add(time.Hour))
	clusterMinted := func(cert []byte) *corev1.Secret {
		kubeconfig, err := credentials.ClientKubeconfig("https://127.0.0.1:6443", []byte("ca"), cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return credentialsSecret(map[string][]byte{credentials.KeyKubeconfig: kubeconfig})
	}
	renewing := clusterMinted(short)
	renewing.Data[credentials.KeyPrivateKey] = newKey
	recordedReady := func(s *v1alpha1.Session) {
		s.Status.BackendURL, s.Status.ObservedGeneration = "https://127.0.0.1:6443", 1
		s.Status.Conditions = conditions(credsMinted, policyApplied, sessionReady)
	}
	policy := PolicyState{Exists: true, Owned: true, UpToDate: true}
	csrPending := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCSRPending,
		Message: "waiting for signer kubernetes.io/kube-apiserver-client to issue the certificate"}
	gardenerDown := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "gardener: connection refused"}
	shootGone := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonTargetNotFound, Message: `shoot "local" not found`}
	// failedAt is a shoot session's observation of Gardener failing ago,
	// for the count-th time in a row.
	failedAt := func(c metav1.Condition, ago time.Duration, count int) Observed {
		return Observed{Session: session(), Policy: policy, Target: &TargetProblem{Reason: c.Reason, Message: c.Message},
			GardenerFailure: &controllerutil.Failure{Reason: c.Reason, Message: c.Message, At: clock.Now().Add(-ago), Count: count}}
	}
	shootIssued := issue(t, key, "clustergate:session:alice", []string{"gardener.cloud:project:viewers", sessionGroup}, created.Add(2*time.Hour))
	shootAdminIssued := issue(t, key, "clustergate:session:alice", []string{"gardener.cloud:project:admins", sessionGroup}, created.Add(2*time.Hour))
	admin := func(s *v1alpha1.Session) { s.Spec.AccessLevel.Group = v1alpha1.AccessLevelAdmin }
	targetDown := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "dial tcp 127.0.0.1:6443: connection refused"}
	targetGone := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonTargetNotFound, Message: "kubeconfig Secret clustergate-system/mc-1 not found"}

	tests := []struct {
		name   string
		obs    Observed
		expect Action
	}{
		{name: "new session gets the finalizer",
			obs:    Observed{Session: session(func(s *v1alpha1.Session) { s.Finalizers = nil })},
			expect: Action{Type: AddFinalizer}},
		{name: "shoot target: key first",
			obs:    Observed{Session: session()},
			expect: Action{Type: CreatePrivateKey}},
		{name: "shoot target: then the CSR on the Shoot",
			obs:    Observed{Session: session(), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key})},
			expect: Action{Type: CreateCSR}},
		{name: "shoot target: approve the CSR",
			obs:    Observed{Session: session(), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}), CSR: csr(t, key, nil)},
			expect: Action{Type: ApproveCSR}},
		{name: "shoot target: issued for the owner in Gardener's viewer group: store it",
			obs: Observed{Session: session(), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, shootIssued, certificatesv1.CertificateApproved)},
			expect: Action{Type: WriteCertificate}},
		{name: "shoot target, admin: issued in Gardener's admin group: store it",
			obs: Observed{Session: session(admin), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, shootAdminIssued, certificatesv1.CertificateApproved)},
			expect: Action{Type: WriteCertificate}},
		{name: "shoot target, viewer: a certificate in Gardener's admin group is refused",
			obs: Observed{Session: session(), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, shootAdminIssued, certificatesv1.CertificateApproved), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCertificateInvalid,
					Message: "the issued certificate is for CN=clustergate:session:alice O=[gardener.cloud:project:admins clustergate:session-name:sre/fix-etcd], " +
						"not CN=clustergate:session:alice O=[gardener.cloud:project:viewers clustergate:session-name:sre/fix-etcd]"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "shoot target renewal: a new key first",
			obs:    Observed{Session: session(recordedReady), Credentials: clusterMinted(short), Policy: policy, Now: renewAt},
			expect: Action{Type: CreatePrivateKey}},
		{name: "shoot target, a level of the server's own with a group: minted like admin and viewer",
			obs:    Observed{Session: session(func(s *v1alpha1.Session) { s.Spec.AccessLevel.Group = "breakglass" })},
			expect: Action{Type: CreatePrivateKey}},
		{name: "a level the server's configuration no longer has",
			obs: Observed{Session: session(func(s *v1alpha1.Session) { s.Spec.AccessLevel.Group = "removed" })},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: conditions(
				metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonAccessLevelInvalid,
					Message: `the server has no access level "removed" (--session-access-config)`},
				policyApplied,
				metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonAccessLevelInvalid,
					Message: `the server has no access level "removed" (--session-access-config)`})}},
		{name: "a level without a group, unscoped (the configuration changed since the create)",
			obs: Observed{Session: session(clusterTarget, func(s *v1alpha1.Session) { s.Spec.AccessLevel.Group = "debugger" })},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: conditions(
				metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonAccessLevelInvalid,
					Message: `access level "debugger" has no group for a whole target: a session of it must be scoped to namespaces`},
				policyApplied,
				metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonAccessLevelInvalid,
					Message: `access level "debugger" has no group for a whole target: a session of it must be scoped to namespaces`})}},
		{name: "shoot target: Gardener failed a moment ago: reported, retried after a second",
			obs:    failedAt(gardenerDown, 0, 1),
			expect: Action{Type: UpdateStatus, RequeueAfter: time.Second, Conditions: conditions(gardenerDown, policyApplied, notReady(gardenerDown))}},
		{name: "shoot target: Gardener failed again: backs off, up to RetryAfter",
			obs:    failedAt(gardenerDown, 10*time.Second, 9),
			expect: Action{Type: UpdateStatus, RequeueAfter: 20 * time.Second, Conditions: conditions(gardenerDown, policyApplied, notReady(gardenerDown))}},
		{name: "shoot target: no such Shoot: asked again after the backoff too, as no event says it appeared",
			obs:    failedAt(shootGone, 0, 2),
			expect: Action{Type: UpdateStatus, RequeueAfter: 2 * time.Second, Conditions: conditions(shootGone, policyApplied, notReady(shootGone))}},
		{name: "credentials minted, no policy yet",
			obs:    Observed{Session: session(), Credentials: minted},
			expect: Action{Type: ApplyPolicy}},
		{name: "credentials minted, policy drifted",
			obs:    Observed{Session: session(), Credentials: minted, Policy: PolicyState{Exists: true, Owned: true}},
			expect: Action{Type: ApplyPolicy}},
		{name: "all there: status Ready, requeue at expiry",
			obs: Observed{Session: session(), Credentials: minted, Policy: policy},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: untilExpiry,
				Conditions: conditions(credsMinted, policyApplied, sessionReady)}},
		{name: "Ready and recorded: nothing until expiry",
			obs: Observed{Session: session(func(s *v1alpha1.Session) {
				s.Status.BackendURL, s.Status.ObservedGeneration = "https://127.0.0.1:6443", 1
				s.Status.Conditions = conditions(credsMinted, policyApplied, sessionReady)
			}), Credentials: minted, Policy: policy},
			expect: Action{Type: None, RequeueAfter: untilExpiry}},
		{name: "Istio not installed: says so, still Ready",
			obs: Observed{Session: session(), Credentials: minted, Policy: PolicyState{APIAbsent: true}},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: untilExpiry,
				Conditions: conditions(credsMinted, policyAbsent, sessionReady)}},
		{name: "someone else's policy of that name: not adopted",
			obs: Observed{Session: session(), Credentials: minted, Policy: PolicyState{Exists: true}},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: untilExpiry,
				Conditions: conditions(credsMinted, metav1.Condition{Type: v1alpha1.SessionConditionAuthorizationPolicyReady, Status: metav1.ConditionFalse,
					Reason: v1alpha1.SessionReasonPolicyConflict, Message: "an AuthorizationPolicy of the session's name exists and is not the server's; it is left untouched"},
					sessionReady)}},
		{name: "expired: delete the session",
			obs:    Observed{Session: session(), Credentials: minted, Policy: policy, Now: created.Add(time.Hour)},
			expect: Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonExpired, Message: "Session expired at 2026-11-30T11:00:00Z"}},
		{name: "cluster target: key first",
			obs:    Observed{Session: session(clusterTarget)},
			expect: Action{Type: CreatePrivateKey}},
		{name: "cluster target: then the CSR",
			obs:    Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key})},
			expect: Action{Type: CreateCSR}},
		{name: "cluster target: approve the CSR",
			obs:    Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}), CSR: csr(t, key, nil)},
			expect: Action{Type: ApproveCSR}},
		{name: "cluster target: approved, not issued yet",
			obs: Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, nil, certificatesv1.CertificateApproved), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: 2 * time.Second, Conditions: conditions(csrPending, policyApplied, notReady(csrPending))}},
		{name: "cluster target: denied",
			obs: Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, nil, certificatesv1.CertificateDenied), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCSRDenied, Message: "the target denied the session's certificate signing request"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target: signing failed",
			obs: Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, nil, certificatesv1.CertificateApproved, certificatesv1.CertificateFailed), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCSRFailed, Message: "the target failed to sign the session's certificate"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target refuses the server's identity",
			obs: Observed{Session: session(clusterTarget), Target: &TargetProblem{Reason: v1alpha1.SessionReasonTargetForbidden, Message: "csr is forbidden"}, Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: 30 * time.Second, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonTargetForbidden, Message: "csr is forbidden"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target unreachable",
			obs: Observed{Session: session(clusterTarget), Target: &TargetProblem{Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "dial tcp: connection refused"}, Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: 30 * time.Second, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonTargetUnreachable, Message: "dial tcp: connection refused"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target: issued and valid: store it",
			obs: Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, good, certificatesv1.CertificateApproved)},
			expect: Action{Type: WriteCertificate}},
		{name: "cluster target: issued for the wrong group",
			obs: Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, wrongGroup, certificatesv1.CertificateApproved), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCertificateInvalid,
					Message: "the issued certificate is for CN=clustergate:session:alice O=[admin clustergate:session-name:sre/fix-etcd], not CN=clustergate:session:alice O=[viewer clustergate:session-name:sre/fix-etcd]"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target: issued but already expired",
			obs: Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: key}),
				CSR: csr(t, key, expired, certificatesv1.CertificateApproved), Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCertificateInvalid,
					Message: "the issued certificate is valid from 2026-11-30 09:59:00 +0000 UTC to 2026-11-30 10:00:00 +0000 UTC, not now"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target gone: no timer, the target's arrival queues the session",
			obs: Observed{Session: session(clusterTarget), Target: &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: "kubeconfig Secret clustergate-system/mc-1 not found"},
				Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: untilExpiry, Conditions: conditions(targetGone, policyApplied, notReady(targetGone))}},
		{name: "cluster target unreachable: tried again after RetryAfter",
			obs: Observed{Session: session(clusterTarget), Target: &TargetProblem{Reason: targetDown.Reason, Message: targetDown.Message},
				Policy: policy},
			expect: Action{Type: UpdateStatus, RequeueAfter: 30 * time.Second, Conditions: conditions(targetDown, policyApplied, notReady(targetDown))}},
		{name: "cluster target: certificate outlasts the session: nothing to renew",
			obs:    Observed{Session: session(clusterTarget, recordedReady), Credentials: clusterMinted(good), Policy: policy},
			expect: Action{Type: None, RequeueAfter: untilExpiry}},
		{name: "cluster target: certificate ends before the session: renewal due 2m before",
			obs:    Observed{Session: session(clusterTarget, recordedReady), Credentials: clusterMinted(short), Policy: policy},
			expect: Action{Type: None, RequeueAfter: 27 * time.Minute}},
		{name: "cluster target renewal: a new key first",
			obs:    Observed{Session: session(clusterTarget, recordedReady), Credentials: clusterMinted(short), Policy: policy, Now: renewAt},
			expect: Action{Type: CreatePrivateKey}},
		{name: "cluster target renewal: the CSR of the old key goes",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, CSR: csr(t, key, short, certificatesv1.CertificateApproved),
				Policy: policy, Now: renewAt},
			expect: Action{Type: DeleteCSR}},
		{name: "cluster target renewal: a CSR for the new key",
			obs:    Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, Policy: policy, Now: renewAt},
			expect: Action{Type: CreateCSR}},
		{name: "cluster target renewal: approve it",
			obs:    Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, CSR: csr(t, newKey, nil), Policy: policy, Now: renewAt},
			expect: Action{Type: ApproveCSR}},
		{name: "cluster target renewal: the signer's usual delay is not news: still Ready, polled",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, CSR: csr(t, newKey, nil, certificatesv1.CertificateApproved),
				Policy: policy, Now: renewAt},
			expect: Action{Type: None, RequeueAfter: 2 * time.Second}},
		{name: "cluster target renewal: issued: store it",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, CSR: csr(t, newKey, renewed, certificatesv1.CertificateApproved),
				Policy: policy, Now: renewAt},
			expect: Action{Type: WriteCertificate}},
		{name: "cluster target renewal denied: still Ready until the certificate expires, saying so",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, CSR: csr(t, newKey, nil, certificatesv1.CertificateDenied),
				Policy: policy, Now: renewAt},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: time.Minute, Conditions: func() []metav1.Condition {
				c := credsMinted
				c.Message += "; renewing the client certificate before it expires at 2026-11-30T10:30:00Z: the target denied the session's certificate signing request"
				return conditions(c, policyApplied, sessionReady)
			}()}},
		{name: "cluster target renewal denied and the certificate expired: not Ready",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, CSR: csr(t, newKey, nil, certificatesv1.CertificateDenied),
				Policy: policy, Now: created.Add(30 * time.Minute)},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: 30 * time.Minute, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCertificateInvalid,
					Message: "the client certificate expired at 2026-11-30T10:30:00Z and is not renewed yet: the target denied the session's certificate signing request"}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target renewal: target unreachable: still Ready, tried again after RetryAfter",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, Target: &TargetProblem{Reason: targetDown.Reason, Message: targetDown.Message},
				Policy: policy, Now: renewAt},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: 30 * time.Second, Conditions: func() []metav1.Condition {
				c := credsMinted
				c.Message += "; renewing the client certificate before it expires at 2026-11-30T10:30:00Z: " + targetDown.Message
				return conditions(c, policyApplied, sessionReady)
			}()}},
		{name: "cluster target renewal: the target Secret went and the certificate expired: its own reason, so the next pass asks again",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, Target: &TargetProblem{Reason: targetGone.Reason, Message: targetGone.Message},
				Policy: policy, Now: created.Add(30 * time.Minute)},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: 30 * time.Minute, Conditions: func() []metav1.Condition {
				c := metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: v1alpha1.SessionReasonCertificateInvalid,
					Message: "the client certificate expired at 2026-11-30T10:30:00Z and is not renewed yet: " + targetGone.Message}
				return conditions(c, policyApplied, notReady(c))
			}()}},
		{name: "cluster target renewal: the signer's certificate ends no later than the one in use: not taken, said",
			obs: Observed{Session: session(clusterTarget, recordedReady), Credentials: renewing, Policy: policy, Now: renewAt,
				CSR: csr(t, newKey, issue(t, newKey, "clustergate:session:alice", clusterGroups, created.Add(30*time.Minute)), certificatesv1.CertificateApproved)},
			expect: Action{Type: UpdateStatus, BackendURL: "https://127.0.0.1:6443", RequeueAfter: time.Minute, Conditions: func() []metav1.Condition {
				c := credsMinted
				c.Message += "; renewing the client certificate before it expires at 2026-11-30T10:30:00Z: the signer issued a certificate that ends at 2026-11-30T10:30:00Z, no later than the one in use"
				return conditions(c, policyApplied, sessionReady)
			}()}},
		{name: "cluster target: a CSR for another key, before any certificate: replaced",
			obs:    Observed{Session: session(clusterTarget), Credentials: credentialsSecret(map[string][]byte{credentials.KeyPrivateKey: newKey}), CSR: csr(t, key, good)},
			expect: Action{Type: DeleteCSR}},
		{name: "deleted: credentials first",
			obs:    Observed{Session: session(deleted), Credentials: minted, CSR: csr(t, key, good), Policy: policy},
			expect: Action{Type: DeleteCredentials}},
		{name: "deleted: then the CSR",
			obs:    Observed{Session: session(deleted), CSR: csr(t, key, good), Policy: policy},
			expect: Action{Type: DeleteCSR}},
		{name: "deleted: then the policy",
			obs:    Observed{Session: session(deleted), Policy: policy},
			expect: Action{Type: DeletePolicy}},
		{name: "deleted: someone else's policy stays",
			obs:    Observed{Session: session(deleted), Policy: PolicyState{Exists: true}},
			expect: Action{Type: RemoveFinalizer}},
		{name: "deleted and released",
			obs:    Observed{Session: session(deleted, func(s *v1alpha1.Session) { s.Finalizers = nil })},
			expect: Action{Type: None}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.obs.Now.IsZero() {
				tt.obs.Now = clock.Now()
			}
			if diff := cmp.Diff(tt.expect, NextAction(withLevel(tt.obs), cfg)); diff != "" {
				t.Errorf("action (-want +got):\n%s", diff)
			}
		})
	}
}

func deleted(s *v1alpha1.Session) {
	now := metav1.NewTime(created.Add(time.Hour))
	s.DeletionTimestamp = &now
}
