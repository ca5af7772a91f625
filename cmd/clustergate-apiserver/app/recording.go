// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/clustergate/clustergate/pkg/recording"
)

// addRecordingFlags adds the section of what the server records of
// sessions and where it keeps it.
func (o *Options) addRecordingFlags(fss *cliflag.NamedFlagSets) {
	r := &o.Server.Recording
	fs := fss.FlagSet("recording")
	fs.StringVar((*string)(&r.Policy), "recording", string(r.Policy),
		"Recording of sessions: every exec and attach stream as an asciicast v2 recording, every proxied request in a request log. "+
			"off, best-effort (a stream runs when its recording cannot be written) or required (an interactive stream is refused when its recording cannot be started, and closed when it fails; "+
			"a way in that cannot be recorded, such as port-forward or the kubelet's run, is refused).")
	fs.StringVar(&r.Dir, "recording-dir", r.Dir, "Directory of the recordings (default: recordings/ in --data-dir).")
	fs.StringVar(&r.S3.Endpoint, "recording-s3-endpoint", r.S3.Endpoint,
		"URL of an S3-compatible server to keep recordings in instead of --recording-dir, so that every replica reads every recording: "+
			"https://host[:port] (http:// only to a loopback address).")
	fs.StringVar(&r.S3.Bucket, "recording-s3-bucket", r.S3.Bucket, "Bucket of the recordings in --recording-s3-endpoint; it must exist.")
	fs.StringVar(&r.S3.Prefix, "recording-s3-prefix", r.S3.Prefix, "Prefix of the recordings' object keys in the bucket, e.g. clustergate/.")
	fs.StringVar(&r.S3.Region, "recording-s3-region", r.S3.Region, "Region of the bucket (default: asked of the server).")
	fs.StringVar(&r.S3.CredentialsFile, "recording-s3-credentials-file", r.S3.CredentialsFile,
		"File with the access key in the AWS shared credentials format (aws_access_key_id, aws_secret_access_key), read again every minute "+
			"(default: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment).")
	fs.StringVar(&r.S3.CAFile, "recording-s3-ca-file", r.S3.CAFile, "PEM CAs that verify the S3 server's certificate (default: the system's).")
	fs.DurationVar(&r.Retention, "recording-retention", r.Retention,
		"How long recordings and request logs are kept after a session's last one was written; 0 keeps them.")
	fs.DurationVar(&r.FlushInterval, "recording-flush-interval", r.FlushInterval,
		"How often a growing recording or request log is written: what a replica that dies may lose.")
}

// defaultRecording sets the defaults of the recording flags.
func (o *Options) defaultRecording() {
	r := &o.Server.Recording
	r.Policy, r.Retention, r.FlushInterval = recording.PolicyBestEffort, 90*24*time.Hour, recording.DefaultFlushInterval
}

// completeRecording puts the recordings under --data-dir unless told.
func (o *Options) completeRecording() {
	if o.Server.Recording.Dir == "" {
		o.Server.Recording.Dir = filepath.Join(o.DataDir, "recordings")
	}
}

// validateRecording checks the recording flags.
func (o *Options) validateRecording() []error {
	r := o.Server.Recording
	var errs []error
	if !slices.Contains(recording.Policies, r.Policy) {
		errs = append(errs, fmt.Errorf("--recording must be one of %v, got %q", recording.Policies, r.Policy))
	}
	if r.Retention < 0 || r.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("--recording-retention may not be negative and --recording-flush-interval must be positive"))
	}
	if r.S3.Endpoint != "" && r.Policy != recording.PolicyOff {
		errs = append(errs, r.S3.Validate()...)
	}
	return errs
}
