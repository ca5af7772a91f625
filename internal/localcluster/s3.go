// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3ComponentName is the S3 server's component name, for StopComponent.
const S3ComponentName = "s3"

// S3Server is a real S3-compatible server on loopback: the Versity S3
// gateway (hack/tools/versitygw) over a directory, with one bucket.
type S3Server struct {
	// Endpoint is its URL, plain http on 127.0.0.1.
	Endpoint string
	Bucket   string
	// CredentialsFile holds the root access key in the AWS shared
	// credentials format, as --recording-s3-credentials-file reads it.
	CredentialsFile string

	cp *ControlPlane
}

// StartS3 starts the S3 server with fresh root credentials, and creates
// the bucket. It is stopped with the control plane; one server runs at a
// time.
func (cp *ControlPlane) StartS3(ctx context.Context, bucket string) (*S3Server, error) {
	dir := filepath.Join(cp.opts.Dir, "s3")
	for _, d := range []string{"data", "meta"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	key, secret := make([]byte, 10), make([]byte, 20)
	_, _ = rand.Read(key)
	_, _ = rand.Read(secret)
	access, secretKey := "CG"+hex.EncodeToString(key), hex.EncodeToString(secret)
	s := &S3Server{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), Bucket: bucket,
		CredentialsFile: filepath.Join(dir, "credentials"), cp: cp}
	if err := os.WriteFile(s.CredentialsFile, []byte(fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", access, secretKey)), 0o600); err != nil {
		return nil, err
	}
	// The credentials go in the environment, not on the command line that
	// ps shows; the metadata goes to a sidecar directory, so that the data
	// directory's file system need not have extended attributes.
	env := []string{"ROOT_ACCESS_KEY_ID=" + access, "ROOT_SECRET_ACCESS_KEY=" + secretKey}
	if err := cp.launch(S3ComponentName, filepath.Join(cp.opts.BinDir, "versitygw"), env,
		"--port", "127.0.0.1:"+strconv.Itoa(port), "--quiet", "--health", "/healthz",
		"posix", "--sidecar", filepath.Join(dir, "meta"), filepath.Join(dir, "data")); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	client, err := minio.New("127.0.0.1:"+strconv.Itoa(port), &minio.Options{Creds: credentials.NewStaticV4(access, secretKey, "")})
	if err != nil {
		return nil, err
	}
	if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil && minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
		return nil, fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	return s, nil
}

// Stop stops the S3 server; its objects stay for Start.
func (s *S3Server) Stop() error { return s.cp.StopComponent(S3ComponentName) }

// Start starts the stopped S3 server again and waits until it serves.
func (s *S3Server) Start(ctx context.Context) error {
	if err := s.cp.restart(S3ComponentName); err != nil {
		return err
	}
	return s.waitReady(ctx)
}

func (s *S3Server) waitReady(ctx context.Context) error {
	return s.cp.waitHTTP(ctx, s.Endpoint+"/healthz", nil)
}
