// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// idleAction is the next step for a session that went unused for its idle
// timeout: it ends like an expired one, but stays until its expiry so that
// its owner and the auditors see why it ended. First its conditions say
// Idle (the status write every replica's connection tracker reacts to,
// with the event), then a scoped session's RoleBindings and its credentials
// are removed; the CSR and the policy of a session go with the session at
// its expiry, as they are no credentials and let nothing through once the
// proxy refuses it.
func idleAction(o Observed, untilExpiry time.Duration) Action {
	s := o.Session
	ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady)
	if ready == nil || ready.Reason != v1alpha1.SessionReasonIdle {
		msg := idleMessage(s)
		a := statusOr(o, credentialsFalse(v1alpha1.SessionReasonIdle, msg), s.Status.BackendURL, policyCondition(o.Policy), untilExpiry)
		a.Reason, a.Message = v1alpha1.SessionReasonIdle, "Session ended: "+msg
		return a
	}
	// Once marked, the message stays as written, even if a use recorded
	// late moved lastUsedAt.
	idle := credentialsFalse(v1alpha1.SessionReasonIdle, ready.Message)
	// A scoped session's RoleBindings go first, while its target is
	// reached; one that cannot be reached now keeps them until the
	// session's end.
	if b := o.Bindings.all(); len(b) > 0 {
		return Action{Type: DeleteBinding, Binding: b[0]}
	}
	if o.Credentials != nil {
		return Action{Type: DeleteCredentials}
	}
	return statusOr(o, idle, s.Status.BackendURL, policyCondition(o.Policy), untilExpiry)
}

// idleMessage says since when and for how long a session went unused; it
// depends on the object only, so that passes agree and write it once.
func idleMessage(s *v1alpha1.Session) string {
	deadline, ok := v1alpha1.IdleDeadline(s)
	if !ok {
		return "no proxied request or open stream for longer than its idle timeout; its credentials were removed"
	}
	timeout := s.Spec.IdleTimeout.Duration
	return fmt.Sprintf("no proxied request or open stream from %s to its idle deadline %s (idle timeout %s); its credentials were removed",
		deadline.Add(-timeout).UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339), timeout)
}

// untilIdle is how long a session has until its idle deadline, or 0 for
// one without an idle timeout; at least a millisecond, since 0 would mean
// never.
func untilIdle(s *v1alpha1.Session, now time.Time) time.Duration {
	deadline, ok := v1alpha1.IdleDeadline(s)
	if !ok {
		return 0
	}
	return max(deadline.Sub(now), time.Millisecond)
}
