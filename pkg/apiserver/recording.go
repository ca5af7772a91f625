// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

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
	// S3 is the bucket of the S3 store, used instead of Dir when its
	// Endpoint is set.
	S3 store.S3Config
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
	s, err := c.newStore()
	if err != nil {
		return nil, recording.Reader{}, err
	}
	// In a pod, the host name is the pod's name: which replica recorded.
	replica, _ := os.Hostname()
	return recording.New(recording.Config{Store: s, Policy: c.Policy, Replica: replica, FlushInterval: c.FlushInterval,
		Retention: c.Retention}), recording.Reader{Store: s}, nil
}

// newStore returns the S3 store when an endpoint is set, else the local
// directory.
func (c RecordingConfig) newStore() (store.Store, error) {
	if c.S3.Endpoint == "" {
		s, err := store.NewLocal(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("the recording directory: %w", err)
		}
		return s, nil
	}
	s, err := store.NewS3(c.S3)
	if err != nil {
		return nil, fmt.Errorf("the recording bucket: %w", err)
	}
	// A bucket that cannot be reached at start is logged, not fatal: the
	// policy decides about streams while it cannot be written.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		klog.ErrorS(err, "Recording bucket not reachable", "endpoint", c.S3.Endpoint, "bucket", c.S3.Bucket)
	}
	return s, nil
}
