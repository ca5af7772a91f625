// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionevents holds the lifecycle events of sessions that leave
// the server as CloudEvents: their types and data (the contract with the
// sinks, docs/usage.md "Session events"), their derivation from what a
// Session shows (Derive, a pure function: the same session and history give
// the same events with the same ids, so that a derivation done again after
// a crash or a leader change makes nothing new), and their CloudEvent form.
// No credential is in any of them: they are made of the session's spec and
// the decisions, conditions and times of its status.
package sessionevents

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Type is a CloudEvent type of a session's lifecycle.
type Type string

// The types of session events, in the order of a session's life; each
// step of a session emits one event.
const (
	// Requested: the session was created, or an extension of it asked
	// for; data.request says what, and, when it waits, who may decide and
	// the command that approves it.
	Requested Type = "dev.clustergate.session.requested"
	// AutoApproved: a SessionApprovalPolicy approved a request without a
	// human; data.decision.policy names it.
	AutoApproved Type = "dev.clustergate.session.auto_approved"
	// Approved: one approver approved a request (one event each).
	Approved Type = "dev.clustergate.session.approved"
	// Denied: an approver denied a request.
	Denied Type = "dev.clustergate.session.denied"
	// Opened: the session became Ready: its owner may use it.
	Opened Type = "dev.clustergate.session.opened"
	// Extended: the session's expiry moved later.
	Extended Type = "dev.clustergate.session.extended"
	// Idle: the session ended unused for its idle timeout.
	Idle Type = "dev.clustergate.session.idle"
	// Locked: a SessionLock holds the session.
	Locked Type = "dev.clustergate.session.locked"
	// Unlocked: no SessionLock holds it any longer.
	Unlocked Type = "dev.clustergate.session.unlocked"
	// RecordingFailed: the recording of one of the session's interactive
	// streams failed, on any replica; data.recording says which and what
	// became of the stream.
	RecordingFailed Type = "dev.clustergate.session.recording_failed"
	// Revoked: the session was deleted before its expiry; data.end.revokedBy
	// names who deleted it.
	Revoked Type = "dev.clustergate.session.revoked"
	// Ended: the session is gone; data.end.reason says why.
	Ended Type = "dev.clustergate.session.ended"
)

// Types are every type, in the order of a session's life: events of one
// moment are delivered in this order.
var Types = []Type{Requested, AutoApproved, Approved, Denied, Opened, Extended, Idle, Locked, Unlocked, RecordingFailed, Revoked, Ended}

// Rank is the place of a type in Types, which orders events of one moment.
func Rank(t Type) int {
	for i, have := range Types {
		if have == t {
			return i
		}
	}
	return len(Types)
}

// The reasons a session ends (data.end.reason).
const (
	EndExpired          = "Expired"
	EndIdle             = "Idle"
	EndDenied           = "Denied"
	EndApprovalTimedOut = "ApprovalTimedOut"
	EndRevoked          = "Revoked"
)

// Event is one step of a session's life.
type Event struct {
	// ID is unique and deterministic: the session's UID, the step and its
	// index, such as "<uid>.approved.0.1".
	ID string `json:"id"`
	// Type is what happened.
	Type Type `json:"type"`
	// Time is when it happened, as the session shows it.
	Time time.Time `json:"time"`
	// Data is the event's data.
	Data Data `json:"data"`
}

// SessionUID is the UID of the event's session.
func (e Event) SessionUID() types.UID { return e.Data.Session.UID }

// Subject is the event's CloudEvents subject: the session's path in its
// namespace, such as "namespaces/shop/sessions/alice-prod".
func (e Event) Subject() string {
	return "namespaces/" + e.Data.Session.Namespace + "/sessions/" + e.Data.Session.Name
}

// Data is the data of every session event (JSON): the session and the
// step's own details.
type Data struct {
	// Session names the session.
	Session SessionRef `json:"session"`
	// Owner is the user who may use the session.
	Owner string `json:"owner"`
	// AccessLevel is spec.accessLevel.group.
	AccessLevel string `json:"accessLevel"`
	// Target is the cluster it reaches.
	Target TargetRef `json:"target"`
	// Namespaces are the namespaces of the target it is scoped to; none is
	// the whole target.
	Namespaces []string `json:"namespaces,omitempty"`
	// TTL is spec.ttl.
	TTL string `json:"ttl"`
	// Justification is spec.reason: why the session was opened.
	Justification string `json:"justification,omitempty"`
	// ExpiresAt is status.expiresAt when the event was derived.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Request is the request of requested, approved, auto_approved,
	// denied and extended events.
	Request *Request `json:"request,omitempty"`
	// Decision is the decision of approved, auto_approved and denied
	// events, and of extended events of a request that needed one.
	Decision *Decision `json:"decision,omitempty"`
	// Condition is the session's condition message of opened, idle,
	// locked and unlocked events: what holds it or since when.
	Condition string `json:"condition,omitempty"`
	// End is why an ended or revoked session ended.
	End *End `json:"end,omitempty"`
	// Recording is the failed recording of a recording_failed event.
	Recording *Recording `json:"recording,omitempty"`
	// Message says what happened in one line, for people (the slack
	// format posts it).
	Message string `json:"message"`
}

// SessionRef names a session.
type SessionRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

// TargetRef names a target: kind "shoot" or "cluster", and its name (a
// cluster's kubeconfig Secret).
type TargetRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Request is a request about a session: its opening or an extension.
type Request struct {
	// Index is its place in status.approvals; 0 for the opening of a
	// session that waits for no approval.
	Index int `json:"index"`
	// Type is Open or Extend.
	Type string `json:"type"`
	// RequestedBy and RequestedAt are who asked, and when.
	RequestedBy string    `json:"requestedBy"`
	RequestedAt time.Time `json:"requestedAt"`
	// Duration is how much later an extension moves the expiry.
	Duration string `json:"duration,omitempty"`
	// ApprovalRequired says whether the request needs a decision.
	ApprovalRequired bool `json:"approvalRequired"`
	// Required is how many distinct approvers must approve; Approvers are
	// those who did so far.
	Required  int32    `json:"required,omitempty"`
	Approvers []string `json:"approvers,omitempty"`
	// Policy is the SessionApprovalPolicy the request goes through; empty
	// under the server's flags.
	Policy string `json:"policy,omitempty"`
	// MayApprove says who may decide, when the policy names them; nil is
	// any holder of the verb approve on sessions in the namespace.
	MayApprove *MayApprove `json:"mayApprove,omitempty"`
	// ApproveCommand and DenyCommand are the kubectl lines that decide a
	// request that waits: "kubectl session approve -n NS NAME".
	ApproveCommand string `json:"approveCommand,omitempty"`
	DenyCommand    string `json:"denyCommand,omitempty"`
}

// MayApprove are the approvers a SessionApprovalPolicy names.
type MayApprove struct {
	Users              []string `json:"users,omitempty"`
	Groups             []string `json:"groups,omitempty"`
	ExcludeOwnerGroups []string `json:"excludeOwnerGroups,omitempty"`
}

// Decision is one decision on a request.
type Decision struct {
	// By is the approver, or "policy:NAME" for an auto-approval.
	By string `json:"by"`
	// At is when.
	At time.Time `json:"at"`
	// Reason is the approver's why.
	Reason string `json:"reason,omitempty"`
	// Policy names the SessionApprovalPolicy of an auto-approval.
	Policy string `json:"policy,omitempty"`
}

// End is why a session ended.
type End struct {
	// Reason is Expired, Idle, Denied, ApprovalTimedOut or Revoked.
	Reason string `json:"reason"`
	// RevokedBy is the user who deleted a session before its expiry
	// (status.deletedBy), when Reason is Revoked.
	RevokedBy string `json:"revokedBy,omitempty"`
}
