// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// DefaultLastUsedInterval is how often, at most, the replicas write a
// session's status.lastUsedAt between them, unless the policy says
// otherwise: the "one status write per session per minute".
const DefaultLastUsedInterval = time.Minute

// idleTimeoutIntervals is how many last-use intervals the shortest idle
// timeout spans. A use is recorded at most two intervals after it happens
// (one waiting for another replica's write to be an interval old, one for
// this replica's own turn), so an idle timeout of four leaves a whole
// interval between the latest write a use can need and the deadline it
// must move: an open stream never meets its idle deadline.
const idleTimeoutIntervals = 4

// clockSkew is how far in the future of the server's clock a replica's
// lastUsedAt may lie: replicas' clocks differ a little.
const clockSkew = 5 * time.Second

// LastUseInterval is how often, at most, the replicas write a session's
// status.lastUsedAt between them.
func (p SessionLimits) LastUseInterval() time.Duration {
	if p.LastUsedInterval > 0 {
		return p.LastUsedInterval
	}
	return DefaultLastUsedInterval
}

// MinIdleTimeout is the shortest spec.idleTimeout other than none.
func (p SessionLimits) MinIdleTimeout() time.Duration {
	return idleTimeoutIntervals * p.LastUseInterval()
}

// DefaultIdleTimeout is the spec.idleTimeout of a session that asks for
// none: the server's default, or its maximum when only that is set.
func (p SessionLimits) DefaultIdleTimeout() time.Duration {
	if p.IdleTimeout == 0 {
		return p.MaxIdleTimeout
	}
	return p.IdleTimeout
}

// validateIdlePolicy reports idle settings that no session could satisfy.
func (p SessionLimits) validateIdlePolicy() error {
	minimum := p.MinIdleTimeout()
	switch {
	case p.LastUsedInterval < 0 || p.LastUsedInterval > 0 && p.LastUsedInterval < time.Second:
		return fmt.Errorf("session last-used interval must be at least 1s, got %s", p.LastUsedInterval)
	case p.IdleTimeout < 0 || p.MaxIdleTimeout < 0:
		return fmt.Errorf("session idle timeouts may not be negative")
	case p.IdleTimeout > 0 && p.IdleTimeout < minimum:
		return fmt.Errorf("session idle timeout %s is below the minimum %s (%d times the last-used interval)", p.IdleTimeout, minimum, idleTimeoutIntervals)
	case p.MaxIdleTimeout > 0 && p.MaxIdleTimeout < minimum:
		return fmt.Errorf("session maximum idle timeout %s is below the minimum %s (%d times the last-used interval)", p.MaxIdleTimeout, minimum, idleTimeoutIntervals)
	case p.MaxIdleTimeout > 0 && p.IdleTimeout > p.MaxIdleTimeout:
		return fmt.Errorf("session idle timeout %s is above the maximum %s", p.IdleTimeout, p.MaxIdleTimeout)
	}
	return nil
}

// validateIdleTimeout checks spec.idleTimeout, defaulted by the strategy,
// against the policy.
func validateIdleTimeout(timeout *metav1.Duration, policy SessionLimits, fldPath *field.Path) field.ErrorList {
	var d time.Duration
	if timeout != nil {
		d = timeout.Duration
	}
	minimum := policy.MinIdleTimeout()
	switch {
	case d < 0:
		return field.ErrorList{field.Invalid(fldPath, d.String(), "may not be negative")}
	case d == 0 && policy.MaxIdleTimeout > 0:
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf(
			"the server requires an idle timeout of at most %s (--session-max-idle-timeout)", policy.MaxIdleTimeout))}
	case d > 0 && d < minimum:
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf(
			"must be 0s (none) or at least %s, %d times the interval at which the replicas record the last use (--session-last-used-interval)",
			minimum, idleTimeoutIntervals))}
	case policy.MaxIdleTimeout > 0 && d > policy.MaxIdleTimeout:
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf("must be at most %s (--session-max-idle-timeout)", policy.MaxIdleTimeout))}
	}
	return nil
}

// validateLastUsedAt checks a change of status.lastUsedAt: it records uses
// of a session that is not over, so it never moves earlier, is never
// removed, does not lie in the future, and stops once the session ended,
// idle included: a use recorded after the idle deadline would otherwise
// bring a session back that every replica already ended.
func validateLastUsedAt(newSession, oldSession *clustergate.Session, now time.Time, fldPath *field.Path) field.ErrorList {
	lastUsed, old := newSession.Status.LastUsedAt, oldSession.Status.LastUsedAt
	switch {
	case lastUsed.Equal(old):
		return nil
	case lastUsed == nil:
		return field.ErrorList{field.Forbidden(fldPath, "may not be removed")}
	case old != nil && lastUsed.Before(old):
		return field.ErrorList{field.Invalid(fldPath, formatTime(lastUsed.Time), fmt.Sprintf("never moves earlier than %s", formatTime(old.Time)))}
	case lastUsed.After(now.Add(clockSkew)):
		return field.ErrorList{field.Invalid(fldPath, formatTime(lastUsed.Time), "may not lie in the future")}
	}
	switch state := v1alpha1.InternalSessionStateAt(oldSession, now); {
	case state == v1alpha1.SessionIdle:
		return field.ErrorList{field.Forbidden(fldPath, wentIdle(oldSession)+"; it is not used any more")}
	case state.Ended() || state == v1alpha1.SessionAwaitingApproval:
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("the session cannot be used (%s)", state))}
	}
	return nil
}
