// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/clustergate/clustergate/pkg/recording"
)

// addRecordingFlags adds the section of what the server records of
// sessions and where it keeps it.
func (o *Options) addRecordingFlags(fss *cliflag.NamedFlagSets) {
	r := &o.Server.Recording
	fs := fss.FlagSet("recording")
	fs.StringVar((*string)(&r.Mode), "recording", string(r.Mode),
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
	fs.StringSliceVar(&r.ManifestKeyFiles, "recording-manifest-key-file", r.ManifestKeyFiles,
		"Files of the keys that sign and verify the recordings' manifests (HMAC-SHA256), e.g. a mounted Secret: one key a line, "+
			"an id and the base64 of at least 32 random bytes. The first key signs, every key verifies: rotate by putting a new key first, "+
			"and remove the old one after --recording-retention. Required with --recording-s3-endpoint, where every replica must verify "+
			"what the others signed (default: a key generated once in --data-dir, "+manifestKeyFile+").")
}

// manifestKeyFile is the key generated in --data-dir without
// --recording-manifest-key-file.
const manifestKeyFile = "recording-manifest.key"

// completeRecording puts the recordings under --data-dir unless told, and
// the manifest key of a local store there when none is given.
func (o *Options) completeRecording() {
	r := &o.Server.Recording
	if r.Dir == "" {
		r.Dir = filepath.Join(o.DataDir, "recordings")
	}
	if len(r.ManifestKeyFiles) == 0 && r.S3.Endpoint == "" {
		r.GeneratedManifestKeyFile = filepath.Join(o.DataDir, manifestKeyFile)
	}
}

// validateRecordingDir refuses a --recording-dir that holds what the
// server keeps elsewhere: --data-dir (it, or a directory that contains
// it), the embedded etcd's and the serving certificates' directories in
// it, and the manifest keys, which a store writer must not read. Its
// default, recordings/ in --data-dir, holds none of them. Symbolic links
// are followed.
func (o *Options) validateRecordingDir() []error {
	r := o.Server.Recording
	if r.Mode == recording.ModeOff || r.S3.Endpoint != "" || r.Dir == "" || o.DataDir == "" {
		// Not completed, or no --data-dir to keep apart from.
		return nil
	}
	dir, err := resolvedPath(r.Dir)
	if err != nil {
		return []error{fmt.Errorf("--recording-dir %q: %w", r.Dir, err)}
	}
	data, err := resolvedPath(o.DataDir)
	if err != nil {
		return []error{fmt.Errorf("--data-dir %q: %w", o.DataDir, err)}
	}
	var errs []error
	if within(data, dir) {
		errs = append(errs, fmt.Errorf("--recording-dir %q is or contains --data-dir %q: its retention would sweep the server's own data", r.Dir, o.DataDir))
	}
	own := map[string]string{"the embedded etcd's directory": filepath.Join(o.DataDir, "etcd"),
		"the serving certificates' directory": o.certDirectory()}
	for _, f := range append(r.ManifestKeyFiles, r.GeneratedManifestKeyFile) {
		if f != "" {
			own["the manifest key "+f] = f
		}
	}
	for what, p := range own {
		resolved, err := resolvedPath(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		if within(resolved, dir) || within(dir, resolved) {
			errs = append(errs, fmt.Errorf("--recording-dir %q holds %s or lies in it", r.Dir, what))
		}
	}
	return errs
}

// resolvedPath is the absolute path of p with the symbolic links of the
// part that exists followed: a directory to be created is resolved through
// its existing parents.
func resolvedPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		resolved, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(resolved, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			return "", err
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// within says whether p is dir or lies inside it; both are clean and
// absolute.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
