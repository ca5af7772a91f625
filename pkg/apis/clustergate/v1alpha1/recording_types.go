// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What the server records of sessions, as sessions/<name>/recordings
// serves it and the recording store keeps it: the two lists below are its
// answers, the other types their items. The recorder writes the same JSON
// to the store (RecordingInfo as a stream's info.json, RecordingManifest
// as its manifest.json, RequestLogEntry as a line of the request log), and
// a manifest's signature covers a digest of info.json as written, so their
// JSON is fixed byte for byte: fields keep their names and order. Times
// are time.Time, with nanoseconds, not metav1.Time, for the same reason;
// none is encoded as protobuf.

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionRecordingList is the answer of GET sessions/<name>/recordings: the
// recorded exec and attach streams of every session that had the name, by
// start.
// +protobuf=false
type SessionRecordingList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the recorded streams.
	Items []SessionRecording `json:"items"`
}

// SessionRecording is a recorded stream as listed: its info, what is
// stored of it, and its manifest once finished.
// +protobuf=false
type SessionRecording struct {
	RecordingInfo `json:",inline"`
	// Bytes is what is stored of the recording: its chunks.
	Bytes int64 `json:"bytes"`
	// Manifest is nil while the stream runs, or when the replica that
	// recorded it stopped before it finished.
	// +optional
	Manifest *RecordingManifest `json:"manifest,omitempty"`
}

// RecordingInfo describes one recorded stream: the stream's info.json in
// the store, and the "clustergate" field of its asciicast's header.
// +protobuf=false
type RecordingInfo struct {
	// Stream identifies the recording within its session.
	Stream          string `json:"stream"`
	RecordedSession `json:",inline"`
	// Way is how the stream came in: aggregated or dataplane.
	// +optional
	Way string `json:"way,omitempty"`
	// Replica is the server replica that recorded the stream.
	// +optional
	Replica string `json:"replica,omitempty"`
	// Subresource is exec or attach.
	Subresource string `json:"subresource"`
	// Node is the node whose kubelet the stream reached through
	// nodes/<node>/proxy, past the pod's own subresource; empty when it
	// came through the pod's exec or attach.
	// +optional
	Node string `json:"node,omitempty"`
	// PodNamespace is the namespace of the pod.
	// +optional
	PodNamespace string `json:"podNamespace,omitempty"`
	// Pod is the pod the stream reached.
	// +optional
	Pod string `json:"pod,omitempty"`
	// Container is the container the stream reached.
	// +optional
	Container string `json:"container,omitempty"`
	// Command is what exec ran.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// TTY says that the stream had a terminal.
	// +optional
	TTY bool `json:"tty,omitempty"`
	// Stdin says that the client sent input.
	// +optional
	Stdin bool `json:"stdin,omitempty"`
	// StartTime is when the stream started.
	StartTime time.Time `json:"startTime" protobuf:"-"`
	// Moderated says that the session's access level requires a moderator:
	// the stream ran only while one followed it.
	// +optional
	Moderated bool `json:"moderated,omitempty"`
}

// RecordingModerator is a moderator's time on a moderated stream, as the
// replica that relayed the stream saw it: from when it first saw the
// moderator follow to when it last did (or the stream ended).
// +protobuf=false
type RecordingModerator struct {
	// User is the moderator's user name.
	User string `json:"user"`
	// From is when the moderator started to follow the stream.
	From time.Time `json:"from" protobuf:"-"`
	// To is when the moderator stopped, or the stream ended.
	To time.Time `json:"to" protobuf:"-"`
}

// RecordedSession names the session a recording belongs to.
// +protobuf=false
type RecordedSession struct {
	// Namespace is the session's namespace.
	Namespace string `json:"namespace"`
	// Name is the session's name.
	Name string `json:"name"`
	// UID tells the sessions that had the same name apart.
	UID types.UID `json:"uid"`
	// Owner is the session's owner.
	Owner string `json:"owner"`
	// Target is the session's target, e.g. "shoot/local".
	// +optional
	Target string `json:"target,omitempty"`
	// Reason is the session's reason.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// RecordingManifest finishes a recording: what was written, and its
// digest, signed by the replica that wrote it. The signature covers a
// canonical form of these fields and the recording's place in the store,
// not this JSON.
// +protobuf=false
type RecordingManifest struct {
	// Stream identifies the recording within its session.
	Stream string `json:"stream"`
	// Protocol is the stream protocol the target chose.
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// EndTime is when the stream ended.
	EndTime time.Time `json:"endTime" protobuf:"-"`
	// Chunks is how many chunk objects, in the capture format, the
	// recording has; CaptureLength and CaptureSHA256 are of their
	// concatenation, as stored. A read checks them: the asciicast is
	// built only from a recording that is what was written.
	Chunks int `json:"chunks"`
	// CaptureLength is the length of the chunks in bytes.
	CaptureLength int64 `json:"captureLength"`
	// CaptureSHA256 is the SHA-256 (hex) of the chunks.
	CaptureSHA256 string `json:"captureSHA256"`
	// InfoSHA256 is the digest of the stream's info.json as written, so
	// that who, where and what the recording says it is is vouched for
	// too.
	// +optional
	InfoSHA256 string `json:"infoSHA256,omitempty"`
	// Failed says why the recording is incomplete, if it is.
	// +optional
	Failed string `json:"failed,omitempty"`
	// Moderators are who moderated the stream, from when to when, in the
	// order they came, when the session's access level requires one.
	// +optional
	// +listType=atomic
	Moderators []RecordingModerator `json:"moderators,omitempty"`
	// Key names the server's manifest key that signed the manifest.
	// +optional
	Key string `json:"key,omitempty"`
	// MAC is the signature: HMAC-SHA256 (hex) under Key.
	// +optional
	MAC string `json:"mac,omitempty"`
}

// What the server verified of a recorded stream it serves: the
// "clustergateVerification" field of the asciicast's header.
const (
	// RecordingVerified: a manifest signed with one of the server's keys
	// describes the recording's chunks and info.
	RecordingVerified = "verified"
	// RecordingLive: the recording has no manifest yet, and its writer
	// signed recently that it runs; its chunks cannot be checked until it
	// ends.
	RecordingLive = "live"
	// RecordingUnverifiedPrefix starts the verification of a recording
	// served although it could not be verified (?unverified=true),
	// followed by why.
	RecordingUnverifiedPrefix = "unverified: "
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionRequestLog is the answer of GET sessions/<name>/recordings/requests:
// the request log of every session that had the name, every request
// through it from either way in. limit and continue page it as a list.
// +protobuf=false
type SessionRequestLog struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the entries of the log.
	Items []RequestLogEntry `json:"items"`
}

// RequestLogEntry is one request of a session's request log.
// +protobuf=false
type RequestLogEntry struct {
	// Time is when the request came.
	Time time.Time `json:"time" protobuf:"-"`
	// Way is how the request came in: aggregated or dataplane.
	// +optional
	Way string `json:"way,omitempty"`
	// Method is the request's HTTP method.
	Method string `json:"method"`
	// Path is the path forwarded to the target.
	Path string `json:"path"`
	// Query is the request's raw query as forwarded to the target, with
	// the values of credentials taken out.
	// +optional
	Query string `json:"query,omitempty"`
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// BytesIn is what the client sent.
	BytesIn int64 `json:"bytesIn"`
	// BytesOut is what the client got.
	BytesOut int64 `json:"bytesOut"`
	// Duration is how long the request ran, as Go prints a duration.
	Duration string `json:"duration"`
	// UserAgent is the client's User-Agent.
	// +optional
	UserAgent string `json:"userAgent,omitempty"`
	// Stream is the recording of an upgraded request, if it has one.
	// +optional
	Stream string `json:"stream,omitempty"`
	// Upgrade is the protocol an upgraded request asked for.
	// +optional
	Upgrade string `json:"upgrade,omitempty"`
	// CloseReason says why a request ended, when not by itself.
	// +optional
	CloseReason string `json:"closeReason,omitempty"`
	// Replica is the server replica that served the request.
	// +optional
	Replica string `json:"replica,omitempty"`
	// Truncated names the fields cut to a bound, so that no line outgrows
	// what the reader takes.
	// +optional
	// +listType=atomic
	Truncated []TruncatedField `json:"truncated,omitempty"`
	// Lost, in a marker entry, is how many entries of the session this
	// replica could not keep from Time to Time+Duration.
	// +optional
	Lost int64 `json:"lost,omitempty"`
	// Moderators are who moderated the request's stream, from when to
	// when, when the session's access level requires one.
	// +optional
	// +listType=atomic
	Moderators []RecordingModerator `json:"moderators,omitempty"`
}

// TruncatedField is a field of a request log entry that was cut.
// +protobuf=false
type TruncatedField struct {
	// Field is the field's JSON name.
	Field string `json:"field"`
	// Length is the field's length in bytes before it was cut.
	Length int `json:"length"`
}
