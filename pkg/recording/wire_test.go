// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// updateWire rewrites the golden files of TestWireFormat: only for a
// change of the wire format that is meant, which every stored recording
// and every client sees.
var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wire")

// TestWireFormat: what the recorder stores and sessions/recordings serves
// (a stream's info.json and manifest.json, the bytes its manifest's MAC
// covers, a request log line, a listed stream) is, byte for byte, what the
// golden files in testdata/wire hold. The stores keep recordings for
// months and info.json's digest is in each signed manifest: these bytes
// must not change with the Go types that make them.
func TestWireFormat(t *testing.T) {
	start := time.Date(2026, 12, 2, 4, 5, 6, 789012345, time.UTC)
	info := v1alpha1.RecordingInfo{Stream: "20261202T040506Z-exec-1", RecordedSession: v1alpha1.RecordedSession{Namespace: "sre", Name: "fix", UID: "6f1c1c55-1f3a-4e22-9d0e-5c1f2a3b4c5d",
		Owner: "alice", Target: "shoot/local", Reason: "INC-42 <disk> & more"}, Way: "dataplane", Replica: "r1", Subresource: "exec",
		Node: "node-1", PodNamespace: "default", Pod: "shell", Container: "sh", Command: []string{"sh", "-c", "echo \"hi\""},
		TTY: true, Stdin: true, StartTime: start}
	manifest := v1alpha1.RecordingManifest{Stream: info.Stream, Protocol: "v5.channel.k8s.io", EndTime: start.Add(90 * time.Second), Chunks: 3,
		CaptureLength: 12345, CaptureSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		InfoSHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae", Failed: "a chunk could not be written: timeout",
		Key: "20261201-000000", MAC: "00ff"}
	request := v1alpha1.RequestLogEntry{Time: start, Way: "aggregated", Method: "POST", Path: "/api/v1/namespaces/default/pods/shell/exec",
		Query: "command=sh&token=REDACTED", Status: 101, BytesIn: 12, BytesOut: 3456, Duration: "1m30s", UserAgent: "kubectl/v1.35.0",
		Stream: info.Stream, Upgrade: "websocket", CloseReason: "session expired", Replica: "r1",
		Truncated: []v1alpha1.TruncatedField{{Field: "userAgent", Length: 204800}}, Lost: 2}
	marshal := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		file string
		got  []byte
	}{
		{"info.json", marshal(info)},
		{"manifest.json", marshal(manifest)},
		{"manifest-signed.json", manifestSignedBytes(&manifest, "sre/fix/6f1c1c55-1f3a-4e22-9d0e-5c1f2a3b4c5d/streams/"+info.Stream+"/")},
		{"request.json", appendRequest(nil, &request)},
		{"request-marshalled.json", marshal(request)},
		{"stream.json", marshal(v1alpha1.SessionRecording{RecordingInfo: info, Bytes: 12345, Manifest: &manifest})},
		{"stream-live.json", marshal(v1alpha1.SessionRecording{RecordingInfo: v1alpha1.RecordingInfo{Stream: "s2", Subresource: "attach", StartTime: start}})},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "wire", tt.file)
			if *updateWire {
				if err := os.WriteFile(path, append(tt.got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(tt.got) + "\n"; got != string(want) {
				t.Errorf("%s changed:\n%s\nwant\n%s", path, got, want)
			}
		})
	}
}
