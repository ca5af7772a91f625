// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package recording records what passes through sessions: every
// interactive stream (exec, attach) as an asciicast v2 recording, and every
// proxied request in a request log per session. It keeps them in a
// store.Store under the session's namespace, name and UID, so that they
// outlive the Session object, and reads them back for auditors.
//
// Recording must not slow the relay: a stream's bytes are copied into a
// bounded queue and decoded and written from a goroutine of their own, in
// chunks every FlushInterval, so that a replica that dies loses at most the
// last interval. At its end a recording gets a manifest with its length
// and SHA-256.
package recording

import (
	"fmt"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Policy says what happens when recordings cannot be written.
type Policy string

const (
	// PolicyOff records nothing.
	PolicyOff Policy = "off"
	// PolicyBestEffort records, and lets streams run when it cannot.
	PolicyBestEffort Policy = "best-effort"
	// PolicyRequired refuses an interactive stream whose recording cannot
	// be started and closes one whose recording fails.
	PolicyRequired Policy = "required"
)

// Policies are the values --recording takes.
var Policies = []Policy{PolicyOff, PolicyBestEffort, PolicyRequired}

// Session names the session a recording belongs to.
type Session struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	Owner     string    `json:"owner"`
	// Target is the session's target, e.g. "shoot/local".
	Target string `json:"target,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// StreamInfo describes one recorded stream; it is the "clustergate" field
// of the recording's header and its info.json.
type StreamInfo struct {
	// Stream identifies the recording within its session.
	Stream string `json:"stream"`
	Session
	// Way is how the stream came in: aggregated or dataplane.
	Way     string `json:"way,omitempty"`
	Replica string `json:"replica,omitempty"`
	// Subresource is exec or attach.
	Subresource  string    `json:"subresource"`
	PodNamespace string    `json:"podNamespace,omitempty"`
	Pod          string    `json:"pod,omitempty"`
	Container    string    `json:"container,omitempty"`
	Command      []string  `json:"command,omitempty"`
	TTY          bool      `json:"tty,omitempty"`
	Stdin        bool      `json:"stdin,omitempty"`
	StartTime    time.Time `json:"startTime"`
}

// Manifest finishes a recording: what was written, and its digest.
type Manifest struct {
	Stream string `json:"stream"`
	// Protocol is the stream protocol the target chose.
	Protocol string    `json:"protocol,omitempty"`
	EndTime  time.Time `json:"endTime"`
	// Chunks is how many chunk objects the recording has; Length and
	// SHA256 are of their concatenation, the asciicast file.
	Chunks int    `json:"chunks"`
	Length int64  `json:"length"`
	SHA256 string `json:"sha256"`
	Events int    `json:"events"`
	// Failed says why the recording is incomplete, if it is.
	Failed string `json:"failed,omitempty"`
}

// Keys of a session's objects: everything under
// <namespace>/<name>/<uid>/, streams under streams/<id>/ and the request
// log in chunks under requests/.
func sessionPrefix(namespace, name string) string { return namespace + "/" + name + "/" }

func streamPrefix(s Session, stream string) string {
	return path.Join(s.Namespace, s.Name, string(s.UID), "streams", stream) + "/"
}

func chunkKey(prefix string, n int) string { return fmt.Sprintf("%scast-%06d", prefix, n) }

const (
	infoObject     = "info.json"
	manifestObject = "manifest.json"
	requestsDir    = "requests"
	streamsDir     = "streams"
)
