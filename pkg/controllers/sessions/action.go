// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessions holds the controller that gives each Session its
// credentials (a client certificate for the owner, signed through the
// target's CSR API: a cluster target's or a Shoot's), its Istio
// AuthorizationPolicy and, when it is scoped to namespaces, its RoleBindings
// on the target, renews credentials that would expire before the session,
// keeps its conditions, and ends it at expiresAt: the session is deleted,
// and its finalizer removes the RoleBindings, then the credentials, the CSR
// and the policy. The leader also sweeps the RoleBindings of sessions that
// are gone from the targets it knows.
//
// Each pass computes the single next action from what it observes
// (NextAction, a pure function tested as data) and performs it. The state of
// a half-done mint or renewal (the private key, the CSR) lives in the
// credentials Secret and on the target, so a crash between passes loses
// nothing.
package sessions

import (
	"fmt"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// ActionType names what a pass does.
type ActionType string

// The actions a pass may take; each writes at most one object.
const (
	None              ActionType = "None"
	AddFinalizer      ActionType = "AddFinalizer"
	DeleteSession     ActionType = "DeleteSession"
	CreatePrivateKey  ActionType = "CreatePrivateKey"
	CreateCSR         ActionType = "CreateCSR"
	ApproveCSR        ActionType = "ApproveCSR"
	WriteCertificate  ActionType = "WriteCertificate"
	ApplyPolicy       ActionType = "ApplyPolicy"
	UpdateStatus      ActionType = "UpdateStatus"
	DeleteCredentials ActionType = "DeleteCredentials"
	DeleteCSR         ActionType = "DeleteCSR"
	DeletePolicy      ActionType = "DeletePolicy"
	ApplyBinding      ActionType = "ApplyBinding"
	DeleteBinding     ActionType = "DeleteBinding"
	RemoveFinalizer   ActionType = "RemoveFinalizer"
)

// Action is the single next step for one session.
type Action struct {
	Type ActionType
	// Conditions are what UpdateStatus writes.
	Conditions []metav1.Condition
	// BackendURL is what UpdateStatus writes as status.backendURL.
	BackendURL string
	// RequeueAfter is when to look again if nothing changes before.
	RequeueAfter time.Duration
	// Reason and Message are the event of a DeleteSession, or of an
	// UpdateStatus that ends an idle session, locks or unlocks one: why.
	Reason, Message string
	// EventAction is the action of that event; empty is "End".
	EventAction string
	// Binding is the RoleBinding an ApplyBinding or DeleteBinding writes
	// on the target.
	Binding types.NamespacedName
}

// PolicyState is what a pass sees of the session's AuthorizationPolicy.
type PolicyState struct {
	// Disabled: the server manages no policies.
	Disabled bool
	// APIAbsent: the core cluster does not serve AuthorizationPolicies.
	APIAbsent bool
	// Exists, Owned and UpToDate describe the policy of the session's name.
	Exists, Owned, UpToDate bool
}

// TargetProblem is why the target could not be reached, if it could not.
type TargetProblem struct {
	Reason, Message string
}

// Observed is what a pass sees.
type Observed struct {
	Session *v1alpha1.Session
	// Credentials is the session's credentials Secret, or nil.
	Credentials *corev1.Secret
	// CSR is the session's CSR on its target, or nil.
	CSR *certificatesv1.CertificateSigningRequest
	// Target is set when the target could not be used.
	Target *TargetProblem
	// GardenerFailure is the last failed attempt to reach a shoot session's
	// Shoot through Gardener, until one succeeds.
	GardenerFailure *controllerutil.Failure
	// Policy is the session's AuthorizationPolicy.
	Policy PolicyState
	// Lock is the SessionLock that holds the session, or nil.
	Lock *Lock
	// Level is the session's access level in the server's configuration,
	// or nil when the configuration has no level of that name.
	Level *sessionaccess.Level
	// Bindings are the session's RoleBindings on its target.
	Bindings BindingsState
	Now      time.Time
}

// Config holds the controller's timing.
type Config struct {
	// CSRPoll is how often a pending CSR is looked at again.
	CSRPoll time.Duration
	// RetryAfter is when a session whose target could not be reached is
	// tried again.
	RetryAfter time.Duration
	// ApprovalTimeout is how long a session may wait for approval before it
	// is removed.
	ApprovalTimeout time.Duration
	// BindingCleanupTimeout is how long a deleted scoped session waits for
	// a target that cannot be reached to remove its RoleBindings there
	// before it goes anyway, leaving them to the orphan sweep.
	BindingCleanupTimeout time.Duration
}

// NextAction computes the single next step for a session.
func NextAction(o Observed, cfg Config) Action {
	s := o.Session
	state := v1alpha1.SessionStateAt(s, o.Now)
	if state == v1alpha1.SessionDeleting {
		return nextCleanupAction(o, cfg)
	}
	expiresAt := s.Status.ExpiresAt
	if state == v1alpha1.SessionExpired {
		return Action{Type: DeleteSession, Reason: v1alpha1.SessionReasonExpired,
			Message: "Session expired at " + expiresAt.UTC().Format(time.RFC3339)}
	}
	approval := approvalAction(o, cfg)
	if approval != nil && approval.Type == DeleteSession {
		return *approval
	}
	if !slices.Contains(s.Finalizers, v1alpha1.SessionFinalizer) {
		return Action{Type: AddFinalizer}
	}
	if approval != nil {
		return *approval
	}
	untilExpiry := time.Duration(0)
	if expiresAt != nil {
		untilExpiry = expiresAt.Sub(o.Now)
	}
	if state == v1alpha1.SessionIdle {
		return idleAction(o, untilExpiry)
	}
	if o.Lock != nil {
		return lockedAction(o, soonest(untilExpiry, untilIdle(s, o.Now)))
	}
	// The next pass comes at the idle deadline, unless a recorded use
	// moves it later first (its status write queues a pass that looks
	// again).
	untilExpiry = soonest(untilExpiry, untilIdle(s, o.Now))

	creds, backendURL, pending := credentialsCondition(o, cfg)
	// Credentials that expire before the session (an extension outlasted
	// them, or the target's signer caps its certificates) are renewed
	// before they expire: the certificate is issued anew for a new key.
	// The proxy's open streams keep the old one.
	if pending == nil && expiresAt != nil {
		notBefore, notAfter := credentials.Validity(o.Credentials.Data[credentials.KeyKubeconfig])
		if at := renewal(notBefore, notAfter, expiresAt.Time); !at.IsZero() {
			if o.Now.Before(at) {
				untilExpiry = soonest(untilExpiry, at.Sub(o.Now))
			} else {
				step, problem := certificateStep(o, cfg)
				if step.Type != None {
					return step
				}
				creds = renewingCondition(creds, problem, notAfter, o.Now)
				untilExpiry = soonest(untilExpiry, soonest(step.RequeueAfter, max(notAfter.Sub(o.Now), 0)))
			}
		}
	}
	if pending != nil {
		if pending.Type == None {
			return unlocked(o, statusOr(o, creds, backendURL, policyCondition(o.Policy), soonest(pending.RequeueAfter, untilExpiry)))
		}
		return *pending
	}
	if p := o.Policy; !p.Disabled && !p.APIAbsent && (!p.Exists || p.Owned && !p.UpToDate) {
		return Action{Type: ApplyPolicy}
	}
	step, retry := bindingStep(o, cfg)
	if step != nil {
		return *step
	}
	return unlocked(o, statusOr(o, creds, backendURL, policyCondition(o.Policy), soonest(untilExpiry, retry)))
}

// soonest returns the sooner of two requeue delays, where 0 means never.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// credentialsCondition returns the CredentialsReady condition and backend
// URL, or, while credentials are not ready, the action that advances them
// (None meaning: wait, with the condition saying why).
func credentialsCondition(o Observed, cfg Config) (metav1.Condition, string, *Action) {
	wait := func(after time.Duration) *Action { return &Action{Type: None, RequeueAfter: after} }
	secret := o.Credentials

	if secret != nil && len(secret.Data[credentials.KeyKubeconfig]) > 0 {
		server, _, err := credentials.TargetCluster(secret.Data[credentials.KeyKubeconfig])
		if err != nil {
			return credentialsFalse(v1alpha1.SessionReasonCertificateInvalid, "the stored credentials cannot be read: "+err.Error()), "", wait(cfg.RetryAfter)
		}
		return metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionTrue,
			Reason: v1alpha1.SessionReasonMinted, Message: "credentials minted and kept by the server"}, server, nil
	}
	if o.Target != nil {
		step, problem := targetWait(o, cfg)
		return problem, "", &step
	}
	step, problem := certificateStep(o, cfg)
	return problem, "", &step
}

// credentialsFalse is a CredentialsReady condition that says why there are
// no usable credentials.
func credentialsFalse(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.SessionConditionCredentialsReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

// targetWait is the wait for a target that could not be used, with the
// condition that says why. A Shoot that Gardener did not give access to is
// tried again when the failure's backoff ends, a cluster target only if it
// could not be reached: its other problems are in a Secret or the server's
// flags, and a change of a marked Secret queues the sessions naming it.
func targetWait(o Observed, cfg Config) (Action, metav1.Condition) {
	retry := time.Duration(0)
	switch r := o.Target.Reason; {
	case o.GardenerFailure != nil:
		// At least a moment: zero would mean never.
		retry = max(o.GardenerFailure.RetryAt(time.Second, cfg.RetryAfter).Sub(o.Now), time.Millisecond)
	case r == v1alpha1.SessionReasonTargetUnreachable || r == v1alpha1.SessionReasonTargetForbidden:
		retry = cfg.RetryAfter
	}
	return Action{Type: None, RequeueAfter: retry}, credentialsFalse(o.Target.Reason, o.Target.Message)
}

// certificateStep is the next step towards the session's client
// certificate on its target, one per pass: a key, a CSR for it, its
// approval, the issued certificate; or a wait, with the condition that says
// what holds it up.
// The first certificate and every renewal take the same steps: a renewal's
// new key sits next to the kubeconfig in use until its certificate
// replaces both, and a CSR made for another key is deleted first.
func certificateStep(o Observed, cfg Config) (Action, metav1.Condition) {
	wait := func(after time.Duration, reason, msg string) (Action, metav1.Condition) {
		return Action{Type: None, RequeueAfter: after}, credentialsFalse(reason, msg)
	}
	step := func(t ActionType) (Action, metav1.Condition) { return Action{Type: t}, metav1.Condition{} }
	if o.Target != nil {
		return targetWait(o, cfg)
	}
	if msg := levelProblem(o); msg != "" {
		return wait(0, v1alpha1.SessionReasonAccessLevelInvalid, msg)
	}
	// Bindings an older session of the same name left on the target go
	// before a certificate in the group they bind is issued.
	if stale := o.Bindings.Stale; len(stale) > 0 {
		return Action{Type: DeleteBinding, Binding: stale[0]}, metav1.Condition{}
	}
	var key []byte
	if o.Credentials != nil {
		key = o.Credentials.Data[credentials.KeyPrivateKey]
	}
	switch {
	case len(key) == 0:
		return step(CreatePrivateKey)
	case o.CSR == nil:
		return step(CreateCSR)
	case !credentials.RequestMatchesKey(o.CSR.Spec.Request, key):
		return step(DeleteCSR)
	}
	switch csrState(o.CSR) {
	case certificatesv1.CertificateDenied:
		return wait(0, v1alpha1.SessionReasonCSRDenied, "the target denied the session's certificate signing request")
	case certificatesv1.CertificateFailed:
		return wait(0, v1alpha1.SessionReasonCSRFailed, "the target failed to sign the session's certificate")
	case "":
		return step(ApproveCSR)
	}
	if len(o.CSR.Status.Certificate) == 0 {
		return wait(cfg.CSRPoll, v1alpha1.SessionReasonCSRPending, fmt.Sprintf("waiting for signer %s to issue the certificate", o.CSR.Spec.SignerName))
	}
	if err := CheckCertificate(o.CSR.Status.Certificate, key, o.Session, *o.Level, o.Now); err != nil {
		return wait(0, v1alpha1.SessionReasonCertificateInvalid, err.Error())
	}
	// A signer whose own certificate expires soon caps what it issues at
	// that: a renewal that gains nothing would be due again at once.
	if o.Credentials != nil && len(o.Credentials.Data[credentials.KeyKubeconfig]) > 0 {
		_, inUse := credentials.Validity(o.Credentials.Data[credentials.KeyKubeconfig])
		if issued, err := credentials.ParseCertificate(o.CSR.Status.Certificate); err == nil && !issued.NotAfter.After(inUse) {
			return wait(0, v1alpha1.SessionReasonCertificateInvalid, fmt.Sprintf(
				"the signer issued a certificate that ends at %s, no later than the one in use", issued.NotAfter.UTC().Format(time.RFC3339)))
		}
	}
	return step(WriteCertificate)
}

// renewingCondition is CredentialsReady while a session's certificate is
// due for renewal and the renewal waits: the credentials in use stay Ready
// until they expire, saying what holds the renewal up unless
// it is only the signer's usual delay; once expired, CertificateInvalid
// with the problem in the message. Its own reason, not the problem's: a
// target problem's condition is carried over to the next pass as it
// stands (unmarkedTarget), and must not be read as a bare one.
func renewingCondition(minted, problem metav1.Condition, notAfter, now time.Time) metav1.Condition {
	expiry := notAfter.UTC().Format(time.RFC3339)
	if now.Before(notAfter) {
		if problem.Reason != v1alpha1.SessionReasonCSRPending {
			minted.Message += fmt.Sprintf("; renewing the client certificate before it expires at %s: %s", expiry, problem.Message)
		}
		return minted
	}
	return credentialsFalse(v1alpha1.SessionReasonCertificateInvalid,
		fmt.Sprintf("the client certificate expired at %s and is not renewed yet: %s", expiry, problem.Message))
}

func policyCondition(p PolicyState) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.SessionConditionAuthorizationPolicyReady, Status: metav1.ConditionTrue}
	switch {
	case p.Disabled:
		c.Reason, c.Message = v1alpha1.SessionReasonPolicyDisabled, "the server manages no Istio policies"
	case p.APIAbsent:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.SessionReasonIstioNotInstalled
		c.Message = "Istio's AuthorizationPolicy API is not served; the session works through the aggregated proxy only"
	case p.Exists && !p.Owned:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.SessionReasonPolicyConflict
		c.Message = "an AuthorizationPolicy of the session's name exists and is not the server's; it is left untouched"
	default:
		c.Reason, c.Message = v1alpha1.SessionReasonPolicyApplied, "only the owner may use the session's direct path"
	}
	return c
}

// nextCleanupAction removes what the session has, its RoleBindings first:
// while a binding may be left, the credentials Secret stays too, so the
// session's removal is not done. A target that cannot be reached holds the
// removal up to cfg.BindingCleanupTimeout.
func nextCleanupAction(o Observed, cfg Config) Action {
	if b := o.Bindings.all(); len(b) > 0 {
		return Action{Type: DeleteBinding, Binding: b[0]}
	}
	if wait := bindingCleanupWait(o, cfg); wait > 0 {
		return Action{Type: None, RequeueAfter: wait}
	}
	switch {
	case o.Credentials != nil:
		return Action{Type: DeleteCredentials}
	case o.CSR != nil:
		return Action{Type: DeleteCSR}
	case o.Policy.Exists && o.Policy.Owned:
		return Action{Type: DeletePolicy}
	case slices.Contains(o.Session.Finalizers, v1alpha1.SessionFinalizer):
		return Action{Type: RemoveFinalizer}
	}
	return Action{Type: None}
}

// statusOr returns an UpdateStatus action when the conditions or backend
// URL differ from the session's, and otherwise None until requeue. A
// scoped session is Ready only once its RoleBindings are.
func statusOr(o Observed, creds metav1.Condition, backendURL string, policy metav1.Condition, requeue time.Duration) Action {
	ready := metav1.Condition{Type: v1alpha1.SessionConditionReady, Status: creds.Status, Reason: creds.Reason, Message: creds.Message}
	if creds.Status == metav1.ConditionTrue {
		ready.Reason, ready.Message = "SessionReady", "the session's proxy may be used by its owner until it expires"
		if scope := scopeCondition(o); scope != nil && scope.Status != metav1.ConditionTrue {
			ready.Status, ready.Reason, ready.Message = scope.Status, scope.Reason, scope.Message
		}
	}
	return statusWith(o, creds, backendURL, policy, ready, requeue)
}

// statusWith is statusOr with the Ready condition given.
func statusWith(o Observed, creds metav1.Condition, backendURL string, policy, ready metav1.Condition, requeue time.Duration) Action {
	want := []metav1.Condition{creds, policy, ready}
	if scope := scopeCondition(o); scope != nil {
		want = append(want, *scope)
	}
	if approved := approvedCondition(o.Session); approved != nil {
		want = append(want, *approved)
	}
	gen := o.Session.Generation
	changed := o.Session.Status.BackendURL != backendURL || o.Session.Status.ObservedGeneration != gen
	for i := range want {
		want[i].ObservedGeneration = gen
		have := meta.FindStatusCondition(o.Session.Status.Conditions, want[i].Type)
		if have == nil || have.Status != want[i].Status || have.Reason != want[i].Reason || have.Message != want[i].Message {
			changed = true
		}
	}
	if !changed {
		return Action{Type: None, RequeueAfter: requeue}
	}
	return Action{Type: UpdateStatus, Conditions: want, BackendURL: backendURL, RequeueAfter: requeue}
}

func csrState(csr *certificatesv1.CertificateSigningRequest) certificatesv1.RequestConditionType {
	for _, c := range []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied, certificatesv1.CertificateFailed, certificatesv1.CertificateApproved} {
		for _, have := range csr.Status.Conditions {
			if have.Type == c && have.Status == corev1.ConditionTrue {
				return c
			}
		}
	}
	return ""
}
