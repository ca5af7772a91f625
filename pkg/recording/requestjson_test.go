// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestAppendRequest: a request log line is what json.Marshal makes of the
// Request, byte for byte, whatever its strings hold.
func TestAppendRequest(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 5, 6, 789000000, time.UTC)
	tests := []struct {
		name string
		req  v1alpha1.RequestLogEntry
	}{
		{"empty", v1alpha1.RequestLogEntry{}},
		{"GET", v1alpha1.RequestLogEntry{Time: at, Way: "data_plane", Method: "GET", Path: "/api/v1/namespaces/default", Query: "timeout=32s", Status: 200,
			BytesOut: 68, Duration: "4ms", UserAgent: "kubectl/v1.34.0 (linux/amd64) kubernetes/abcdef0", CloseReason: "client or target closed", Replica: "r1"}},
		{"stream", v1alpha1.RequestLogEntry{Time: at.Add(time.Nanosecond), Method: "POST", Path: "/api/v1/namespaces/x/pods/p/exec", Status: 101, BytesIn: -1,
			Stream: "s-1", Upgrade: "websocket", Duration: "1h0m0s"}},
		{"escapes", v1alpha1.RequestLogEntry{Time: at, Method: "GET", Path: "/a\"b\\c<d>e&f\n\r\t\b\f\x00\x1f\x7f", Query: "q=\u2028\u2029",
			UserAgent: "é ü 日本 🙂", CloseReason: "bad \xff\xfe utf-8 \xe2\x82"}},
		{"truncated and lost", v1alpha1.RequestLogEntry{Time: at, UserAgent: "x", Truncated: []v1alpha1.TruncatedField{{Field: "userAgent", Length: 204800}, {Field: "query", Length: 5000}}, Lost: 3}},
		{"moderated", v1alpha1.RequestLogEntry{Time: at, Stream: "s-2", Moderators: []v1alpha1.RecordingModerator{
			{User: "carol \"c\"", From: at, To: at.Add(time.Minute)}, {User: "dave", From: at.Add(time.Second), To: at.Add(2 * time.Second)}}}},
		{"zone", v1alpha1.RequestLogEntry{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600+1800))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendRequest(nil, &tt.req); string(got) != string(want) {
				t.Errorf("appended\n%s\nwant\n%s", got, want)
			}
		})
	}
}
