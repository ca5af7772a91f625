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
	// Mode is off, best-effort or required.
	Mode recording.Mode
	// Dir is the directory of the local store.
	Dir string
	// S3 is the bucket of the S3 store, used instead of Dir when its
	// Endpoint is set.
	S3 store.S3Config
	// Retention is how long recordings are kept; 0 keeps them.
	Retention time.Duration
	// FlushInterval is how often growing recordings are written.
	FlushInterval time.Duration
	// ManifestKeyFiles hold the keys that sign and verify the recordings'
	// manifests (recording.LoadManifestKeys): the first key signs.
	ManifestKeyFiles []string
	// GeneratedManifestKeyFile, used when ManifestKeyFiles is empty, is
	// where a key is generated once: it suits one replica on its local
	// store, whose recordings no other replica reads.
	GeneratedManifestKeyFile string
}

// newRecording returns the recorder and the reader of the configured
// store; nil and an empty reader when recording is off.
func (c RecordingConfig) newRecording() (*recording.Recorder, recording.Reader, error) {
	if c.Mode == recording.ModeOff || c.Mode == "" {
		return nil, recording.Reader{}, nil
	}
	keys, err := c.manifestKeys()
	if err != nil {
		return nil, recording.Reader{}, err
	}
	s, err := c.newStore()
	if err != nil {
		return nil, recording.Reader{}, err
	}
	// In a pod, the host name is the pod's name: which replica recorded.
	replica, _ := os.Hostname()
	// The local store holds only this replica's recordings: a read of
	// another's is told so.
	_, ownOnly := s.(*store.Local)
	rec := recording.New(recording.Config{Store: s, Mode: c.Mode, Replica: replica, FlushInterval: c.FlushInterval,
		Retention: c.Retention, Keys: keys})
	return rec, recording.Reader{Store: s, Keys: keys, Replica: replica, OwnOnly: ownOnly, Flush: rec.FlushRequests}, nil
}

// manifestKeys reads the manifest keys, generating the one of
// GeneratedManifestKeyFile first when none are given.
func (c RecordingConfig) manifestKeys() (*recording.ManifestKeys, error) {
	files := c.ManifestKeyFiles
	if len(files) == 0 {
		if c.GeneratedManifestKeyFile == "" {
			return nil, fmt.Errorf("recording: no manifest key file")
		}
		if err := recording.EnsureManifestKeyFile(c.GeneratedManifestKeyFile); err != nil {
			return nil, fmt.Errorf("recording: generating the manifest key: %w", err)
		}
		files = []string{c.GeneratedManifestKeyFile}
	}
	return recording.LoadManifestKeys(files...)
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
