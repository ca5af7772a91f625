// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"os"
	"time"

	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// RecordingConfig configures the recording of sessions: their interactive
// streams and their request logs.
type RecordingConfig struct {
	// Policy is off, best-effort or required.
	Policy recording.Policy
	// Dir is the directory of the local store.
	Dir string
	// Retention is how long recordings are kept; 0 keeps them.
	Retention time.Duration
	// FlushInterval is how often growing recordings are written.
	FlushInterval time.Duration
}

// newRecording returns the recorder and the reader of the configured
// store; nil and an empty reader when recording is off.
func (c RecordingConfig) newRecording() (*recording.Recorder, recording.Reader, error) {
	if c.Policy == recording.PolicyOff || c.Policy == "" {
		return nil, recording.Reader{}, nil
	}
	s, err := store.NewLocal(c.Dir)
	if err != nil {
		return nil, recording.Reader{}, fmt.Errorf("the recording directory: %w", err)
	}
	// In a pod, the host name is the pod's name: which replica recorded.
	replica, _ := os.Hostname()
	return recording.New(recording.Config{Store: s, Policy: c.Policy, Replica: replica, FlushInterval: c.FlushInterval,
		Retention: c.Retention}), recording.Reader{Store: s}, nil
}
