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
// info.json (v1alpha1.RecordingInfo), capture-000001 and on, live.json
// (liveMark), manifest.json (v1alpha1.RecordingManifest), and for a
// moderated stream its moderators' marks and a moderator's request to end
// it (moderation-*.json, moderation.go). Their JSON, and
// the request log's (v1alpha1.RequestLogEntry), are the API tree's types:
// what sessions/recordings serves is what the store holds.
package recording

import (
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
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

// manifestSignedBytes is what the MAC of a manifest found under dir (the
// stream's <namespace>/<name>/<uid>/streams/<id>/) covers: all it holds
// and where it belongs, so that it cannot be moved to another stream or
// session. It is its own canonical form, not the manifest's JSON, so that
// the API type may gain fields without breaking a signature.
func manifestSignedBytes(m *v1alpha1.RecordingManifest, dir string) []byte {
	fields := []any{"clustergate.dev/recording-manifest/v1", dir, m.Stream, m.Protocol, m.EndTime.UnixNano(),
		m.Chunks, m.CaptureLength, m.CaptureSHA256, m.InfoSHA256, m.Failed}
	// A moderated stream's moderators are signed too; the manifests of
	// the others keep the form they always had.
	for _, mod := range m.Moderators {
		fields = append(fields, mod.User, mod.From.UnixNano(), mod.To.UnixNano())
	}
	data, _ := json.Marshal(fields)
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

func streamPrefix(s v1alpha1.RecordedSession, stream string) string {
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
