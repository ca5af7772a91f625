// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package recording records what passes through sessions: every
// interactive stream (exec, attach) as an asciicast v2 recording, and every
// proxied request in a request log per session. It keeps them in a
// store.Store under the session's namespace, name and UID, so that they
// outlive the Session object, and reads them back for auditors.
//
// Recording must not slow the relay, so a stream is stored as it was
// relayed, not as asciicast: its bytes are copied, with their time, into
// chunks in the capture format (see captureMagic), which a goroutine of
// their own checks (the stream must decode) and writes every FlushInterval,
// so that a replica that dies loses at most the last interval. The
// asciicast is built from the chunks when it is read (Reader.Cast), the
// same each time. At its end a recording gets a manifest with the length
// and SHA-256 of its chunks, hashed as they were written, and of its info,
// signed with the server's ManifestKeys, which a read checks; while it
// runs, its writer signs every minute that it is live (live.json).
//
// A stream's objects, under <namespace>/<name>/<uid>/streams/<id>/:
// info.json (StreamInfo), capture-000001 and on, live.json (liveMark),
// manifest.json (Manifest).
package recording

import (
	"encoding/json"
	"fmt"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Mode says what happens when recordings cannot be written.
type Mode string

const (
	// ModeOff records nothing.
	ModeOff Mode = "off"
	// ModeBestEffort records, and lets streams run when it cannot.
	ModeBestEffort Mode = "best-effort"
	// ModeRequired refuses an interactive stream whose recording cannot
	// be started and closes one whose recording fails.
	ModeRequired Mode = "required"
)

// Modes are the values --recording takes.
var Modes = []Mode{ModeOff, ModeBestEffort, ModeRequired}

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
	Subresource string `json:"subresource"`
	// Node is the node whose kubelet the stream reached through
	// nodes/<node>/proxy, past the pod's own subresource; empty when it
	// came through the pod's exec or attach.
	Node         string    `json:"node,omitempty"`
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
	// Chunks is how many chunk objects, in the capture format, the
	// recording has; CaptureLength and CaptureSHA256 are of their
	// concatenation, as stored. Reader.Cast checks them: the asciicast is
	// built only from a recording that is what was written.
	Chunks        int    `json:"chunks"`
	CaptureLength int64  `json:"captureLength"`
	CaptureSHA256 string `json:"captureSHA256"`
	// InfoSHA256 is the digest of the stream's info.json as written, so
	// that who, where and what the recording says it is is vouched for
	// too.
	InfoSHA256 string `json:"infoSHA256,omitempty"`
	// Failed says why the recording is incomplete, if it is.
	Failed string `json:"failed,omitempty"`
	// Key names the ManifestKeys key that signed the manifest; MAC is its
	// HMAC-SHA256 (hex) over signedBytes.
	Key string `json:"key,omitempty"`
	MAC string `json:"mac,omitempty"`
}

// signedBytes is what the MAC of a manifest found under dir (the stream's
// <namespace>/<name>/<uid>/streams/<id>/) covers: all it holds and where
// it belongs, so that it cannot be moved to another stream or session.
func (m *Manifest) signedBytes(dir string) []byte {
	data, _ := json.Marshal([]any{"clustergate.dev/recording-manifest/v1", dir, m.Stream, m.Protocol, m.EndTime.UnixNano(),
		m.Chunks, m.CaptureLength, m.CaptureSHA256, m.InfoSHA256, m.Failed})
	return data
}

// liveMark is what a recording's writer signs every liveInterval while the
// stream runs: that it was writing the stream under dir at Time. A reader
// tells a live recording, which has no manifest yet, from a finished one
// whose manifest is missing by it.
type liveMark struct {
	Time time.Time `json:"time"`
	Key  string    `json:"key"`
	MAC  string    `json:"mac"`
}

func (l *liveMark) signedBytes(dir string) []byte {
	data, _ := json.Marshal([]any{"clustergate.dev/recording-live/v1", dir, l.Time.UnixNano()})
	return data
}

// liveInterval is how often a running recording's live mark is signed
// again; a mark older than liveGrace belongs to a writer that stopped.
const (
	liveInterval = time.Minute
	liveGrace    = 2*liveInterval + writeTimeout
)

// Keys of a session's objects: everything under
// <namespace>/<name>/<uid>/, streams under streams/<id>/ and the request
// log in chunks under requests/.
func sessionPrefix(namespace, name string) string { return namespace + "/" + name + "/" }

func streamPrefix(s Session, stream string) string {
	return path.Join(s.Namespace, s.Name, string(s.UID), "streams", stream) + "/"
}

func chunkKey(prefix string, n int) string { return fmt.Sprintf("%s%s%06d", prefix, chunkPrefix, n) }

const (
	chunkPrefix    = "capture-"
	infoObject     = "info.json"
	liveObject     = "live.json"
	manifestObject = "manifest.json"
	requestsDir    = "requests"
	streamsDir     = "streams"
)
