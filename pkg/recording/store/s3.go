// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 keeps objects in a bucket of an S3-compatible object store, under a
// prefix. Every replica writes to the same bucket, so every replica reads
// every recording back.
//
// It uses github.com/minio/minio-go: a client of the S3 API alone, with
// signature v4, path- and virtual-host-style buckets and any S3-compatible
// server, at a fraction of the dependencies of aws-sdk-go-v2 (which covers
// every AWS service) and without gocloud.dev/blob's layer over three
// providers that clustergate does not need.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
}

var _ Store = &S3{}

// S3Config says where the bucket is and how to reach it.
type S3Config struct {
	// Endpoint is the server's URL: https://host[:port], or
	// http://host:port for a loopback host only.
	Endpoint string
	Bucket   string
	// Prefix is put before every key, e.g. "clustergate/".
	Prefix string
	// Region of the bucket; empty asks the server.
	Region string
	// CredentialsFile holds the access key in the AWS shared credentials
	// format (aws_access_key_id, aws_secret_access_key and optionally
	// aws_session_token); it is read again every minute, so that a
	// rotated Secret is picked up. Empty takes AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY from the environment.
	CredentialsFile string
	// CAFile holds the CAs that verify the server's certificate; empty
	// uses the system's.
	CAFile string
}

// s3Retries bounds the client's own retries of a request, so that a store
// that is down fails a write within the recorder's timeout rather than
// after minio-go's default ten attempts.
const s3Retries = 2

// Validate checks the configuration without reaching the server; errors
// name the flags of cmd/clustergate-apiserver.
func (c S3Config) Validate() []error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, errors.New("--recording-s3-bucket is required with --recording-s3-endpoint"))
	}
	if _, _, err := c.endpoint(); err != nil {
		errs = append(errs, err)
	}
	if c.Prefix != "" && CheckKey(strings.Trim(c.Prefix, "/")) != nil {
		errs = append(errs, fmt.Errorf("--recording-s3-prefix %q is not a valid key prefix", c.Prefix))
	}
	return errs
}

// endpoint splits Endpoint into minio-go's host[:port] and whether to use
// TLS, refusing plain HTTP to anything but a loopback host: recordings hold
// what was typed into shells, and the credentials sign every request.
func (c S3Config) endpoint() (string, bool, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", false, fmt.Errorf("--recording-s3-endpoint must be a URL like https://s3.example.com[:port], got %q", c.Endpoint)
	}
	switch u.Scheme {
	case "https":
		return u.Host, true, nil
	case "http":
		if !isLoopback(u.Hostname()) {
			return "", false, fmt.Errorf("--recording-s3-endpoint %q: plain http is allowed only to a loopback address; use https (with --recording-s3-ca-file for a private CA)", c.Endpoint)
		}
		return u.Host, false, nil
	default:
		return "", false, fmt.Errorf("--recording-s3-endpoint must use https, got %q", c.Endpoint)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewS3 returns a store in the configured bucket. It does not reach the
// server: a store that is down fails writes, which the recording policy
// decides about.
func NewS3(c S3Config) (*S3, error) {
	if errs := c.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	host, secure, _ := c.endpoint()
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	if secure {
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--recording-s3-ca-file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--recording-s3-ca-file %s holds no PEM certificate", c.CAFile)
			}
			tlsConfig.RootCAs = pool
		}
		transport.TLSClientConfig = tlsConfig
	}
	creds := credentials.NewEnvAWS()
	if c.CredentialsFile != "" {
		if _, err := readCredentialsFile(c.CredentialsFile); err != nil {
			return nil, err
		}
		creds = credentials.New(&fileCredentials{path: c.CredentialsFile})
	}
	client, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Transport: transport,
		Region: c.Region, MaxRetries: s3Retries})
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(c.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{client: client, bucket: c.Bucket, prefix: prefix}, nil
}

// Put writes the object in one request: S3 makes it visible whole or not
// at all.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
	return err
}

// Get reads the object.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	object, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, notFound(err)
	}
	defer func() { _ = object.Close() }()
	data, err := io.ReadAll(object)
	if err != nil {
		return nil, notFound(err)
	}
	return data, nil
}

func notFound(err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return ErrNotFound
	}
	return err
}

// List lists the objects under the store's prefix and prefix, by key.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var objects []Object
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		key := strings.TrimPrefix(o.Key, s.prefix)
		if CheckKey(key) != nil {
			continue
		}
		objects = append(objects, Object{Key: key, Size: o.Size, Modified: o.LastModified})
	}
	sort.Slice(objects, func(i, j int) bool { return objects[i].Key < objects[j].Key })
	return objects, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return notFoundIsNil(s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}))
}

func notFoundIsNil(err error) error {
	if errors.Is(notFound(err), ErrNotFound) {
		return nil
	}
	return err
}

// Check reports whether the bucket can be reached with the credentials.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("bucket %q does not exist", s.bucket)
	}
	return nil
}

// credentialsRefresh is how often the credentials file is read again.
const credentialsRefresh = time.Minute

// fileCredentials reads the access key from a file in the AWS shared
// credentials format. It reads the keys of the file's first (or only)
// profile and nothing else: unlike minio-go's FileAWSCredentials it never
// runs a credential_process.
type fileCredentials struct {
	credentials.Expiry
	path string
}

// Retrieve reads the file.
func (f *fileCredentials) Retrieve() (credentials.Value, error) {
	v, err := readCredentialsFile(f.path)
	if err != nil {
		return credentials.Value{}, err
	}
	f.SetExpiration(time.Now().Add(credentialsRefresh), 0)
	return v, nil
}

// RetrieveWithCredContext reads the file.
func (f *fileCredentials) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	return f.Retrieve()
}

// readCredentialsFile parses key = value lines up to the second profile
// header. Errors never quote the file's content.
func readCredentialsFile(path string) (credentials.Value, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return credentials.Value{}, fmt.Errorf("--recording-s3-credentials-file: %w", err)
	}
	v := credentials.Value{SignerType: credentials.SignatureV4}
	sections := 0
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "[") {
			if sections++; sections > 1 {
				break
			}
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "aws_access_key_id":
			v.AccessKeyID = strings.TrimSpace(value)
		case "aws_secret_access_key":
			v.SecretAccessKey = strings.TrimSpace(value)
		case "aws_session_token":
			v.SessionToken = strings.TrimSpace(value)
		}
	}
	if v.AccessKeyID == "" || v.SecretAccessKey == "" {
		return credentials.Value{}, fmt.Errorf("--recording-s3-credentials-file %s must set aws_access_key_id and aws_secret_access_key", path)
	}
	return v, nil
}
