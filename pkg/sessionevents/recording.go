// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"fmt"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// RecordingOutcome says what became of a stream whose recording failed.
type RecordingOutcome string

// The outcomes of a failed recording.
const (
	// StreamRefused: the recording could not start and the server records
	// every stream (--recording=required): the stream never opened.
	StreamRefused RecordingOutcome = "Refused"
	// StreamEnded: the recording failed while the stream ran under
	// --recording=required: the stream was closed.
	StreamEnded RecordingOutcome = "Ended"
	// StreamUnrecorded: the recording failed under
	// --recording=best-effort: the stream went on (or started) unrecorded
	// from then on.
	StreamUnrecorded RecordingOutcome = "Unrecorded"
)

// Recording is the failed recording of a recording_failed event: which
// stream, on which replica, and what became of the stream. Why the store
// failed stays in the replica's log (an error of the store may name its
// endpoint or bucket).
type Recording struct {
	// Stream is the stream's id, as sessions/recordings lists it.
	Stream string `json:"stream"`
	// Replica is the server replica that relayed the stream.
	Replica string `json:"replica"`
	// Way is how the stream came in: aggregated or data_plane.
	Way string `json:"way,omitempty"`
	// Outcome is Refused, Ended or Unrecorded.
	Outcome RecordingOutcome `json:"outcome"`
}

// RecordingFailure is a failed recording as the recorder reports it.
type RecordingFailure struct {
	// Info is the stream's recording info: its session, id, replica, way.
	Info v1alpha1.RecordingInfo
	// Outcome is what became of the stream.
	Outcome RecordingOutcome
	// At is when the recording failed.
	At time.Time
}

// RecordingFailedEvent is the event of a failed recording of session s,
// whose id "<uid>.recording_failed.<stream>" makes it once per stream,
// whichever replica stores it and however often.
func RecordingFailedEvent(s *v1alpha1.Session, f RecordingFailure) Event {
	d := dataOf(s)
	d.Recording = &Recording{Stream: f.Info.Stream, Replica: f.Info.Replica, Way: f.Info.Way, Outcome: f.Outcome}
	d.Message = fmt.Sprintf("the recording of stream %s of session %s/%s failed on replica %s: %s", f.Info.Stream, s.Namespace, s.Name, f.Info.Replica, outcomeText(f.Outcome))
	return Event{ID: id(s, RecordingFailed) + "." + f.Info.Stream, Type: RecordingFailed, Time: f.At.UTC(), Data: d}
}

func outcomeText(o RecordingOutcome) string {
	switch o {
	case StreamRefused:
		return "the stream was refused (--recording=required)"
	case StreamEnded:
		return "the stream was closed (--recording=required)"
	default:
		return "the stream runs unrecorded (--recording=best-effort)"
	}
}

// SessionOfRecording is the session a recording names, as far as the
// recording knows it: for a recording_failed event of a session no longer
// in the replica's cache.
func SessionOfRecording(r v1alpha1.RecordedSession) *v1alpha1.Session {
	s := &v1alpha1.Session{}
	s.Namespace, s.Name, s.UID = r.Namespace, r.Name, r.UID
	s.Spec.Owner.Username = r.Owner
	s.Spec.Reason = r.Reason
	return s
}
