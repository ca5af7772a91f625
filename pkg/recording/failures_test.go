// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// failures collects what a FailureReporter is told.
type failures struct {
	mu  sync.Mutex
	got []sessionevents.RecordingFailure
}

func (f *failures) RecordingFailed(r sessionevents.RecordingFailure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, r)
}

// TestFailureReported: the reporter is told once of each stream whose
// recording fails, at its start or mid-way, with what became of the
// stream under each mode; a recording that works tells it nothing.
func TestFailureReported(t *testing.T) {
	tests := []struct {
		name     string
		mode     Mode
		failOpen bool
		failMid  bool
		want     []sessionevents.RecordingOutcome
	}{
		{name: "required, the store fails at open", mode: ModeRequired, failOpen: true, want: []sessionevents.RecordingOutcome{sessionevents.StreamRefused}},
		{name: "best-effort, the store fails at open", mode: ModeBestEffort, failOpen: true, want: []sessionevents.RecordingOutcome{sessionevents.StreamUnrecorded}},
		{name: "required, the store fails mid-way", mode: ModeRequired, failMid: true, want: []sessionevents.RecordingOutcome{sessionevents.StreamEnded}},
		{name: "best-effort, the store fails mid-way", mode: ModeBestEffort, failMid: true, want: []sessionevents.RecordingOutcome{sessionevents.StreamUnrecorded}},
		{name: "the store works", mode: ModeRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &switchStore{Store: newLocalStore(t), fail: tt.failOpen}
			r := newTestRecorder(t, st, tt.mode)
			told := &failures{}
			r.ReportFailuresTo(told)
			s, err := r.OpenStream(context.Background(), v1alpha1.RecordingInfo{RecordedSession: testSession, Way: "data-plane"})
			if err == nil {
				s.OnFailure(func(error) {})
				st.fail = tt.failMid
				s.ToClient([]byte(wsResponse))
				s.ToClient(wsFrame(2, true, false, channelMessage(channelStdout, "x")))
				s.Close()
				s.Wait()
			}
			var outcomes []sessionevents.RecordingOutcome
			for _, f := range told.got {
				outcomes = append(outcomes, f.Outcome)
				if f.Info.RecordedSession != testSession || f.Info.Stream == "" || f.Info.Replica != "r1" || f.Info.Way != "data-plane" || !f.At.Equal(testStart) {
					t.Errorf("told %+v", f)
				}
			}
			if diff := cmp.Diff(tt.want, outcomes); diff != "" {
				t.Errorf("outcomes told (-want +got):\n%s", diff)
			}
		})
	}
}
