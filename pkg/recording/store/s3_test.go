// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestS3ConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint, prefix, wantErr string
	}{
		{name: "https", endpoint: "https://s3.example.com"},
		{name: "https with port and slash", endpoint: "https://s3.example.com:9000/", prefix: "clustergate/"},
		{name: "http to loopback", endpoint: "http://127.0.0.1:7070"},
		{name: "http to localhost", endpoint: "http://localhost:7070"},
		{name: "http to IPv6 loopback", endpoint: "http://[::1]:7070"},
		{name: "http elsewhere", endpoint: "http://s3.example.com", wantErr: "plain http is allowed only to a loopback address"},
		{name: "http to a private address", endpoint: "http://10.0.0.1:9000", wantErr: "plain http is allowed only"},
		{name: "no scheme", endpoint: "s3.example.com", wantErr: "must be a URL"},
		{name: "a path", endpoint: "https://s3.example.com/bucket", wantErr: "must be a URL"},
		{name: "user info", endpoint: "https://key:secret@s3.example.com", wantErr: "must be a URL"},
		{name: "another scheme", endpoint: "ftp://s3.example.com", wantErr: "must use https"},
		{name: "bad prefix", endpoint: "https://s3.example.com", prefix: "a/../b", wantErr: "--recording-s3-prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := errors.Join(S3Config{Endpoint: tc.endpoint, Bucket: "b", Prefix: tc.prefix}.Validate()...)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") && !strings.Contains(tc.endpoint, "secret") {
				t.Errorf("error %v", err)
			}
		})
	}
	if err := errors.Join(S3Config{Endpoint: "https://s3.example.com"}.Validate()...); err == nil || !strings.Contains(err.Error(), "--recording-s3-bucket") {
		t.Errorf("no bucket: %v", err)
	}
}

func TestReadCredentialsFile(t *testing.T) {
	for _, tc := range []struct {
		name, content, wantKey, wantErr string
	}{
		{name: "default profile", content: "[default]\naws_access_key_id = AKID\naws_secret_access_key = s3cr3t\n", wantKey: "AKID"},
		{name: "no section", content: "aws_access_key_id=AKID\naws_secret_access_key=s3cr3t\naws_session_token=tok\n", wantKey: "AKID"},
		{name: "only the first profile", content: "[a]\naws_access_key_id = AKID\naws_secret_access_key = s3cr3t\n[b]\naws_access_key_id = OTHER\n", wantKey: "AKID"},
		{name: "no secret", content: "[default]\naws_access_key_id = AKID\n", wantErr: "must set aws_access_key_id and aws_secret_access_key"},
		{name: "process is not run", content: "[default]\ncredential_process = /bin/false\n", wantErr: "must set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "credentials")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			v, err := readCredentialsFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "AKID") {
					t.Errorf("got %v, want %q without the key", err, tc.wantErr)
				}
				return
			}
			if err != nil || v.AccessKeyID != tc.wantKey || v.SecretAccessKey != "s3cr3t" {
				t.Errorf("got %+v %v", v, err)
			}
		})
	}
}
