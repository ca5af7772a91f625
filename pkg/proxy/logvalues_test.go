// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"
)

// TestLogValuesReadAsPlainValues: klog's text format writes logInt,
// logBool, logString and logDuration as it writes an int64, a bool, a string
// of one line and a time.Duration.
func TestLogValuesReadAsPlainValues(t *testing.T) {
	tests := []struct {
		name        string
		plain, ours any
	}{
		{"zero", int64(0), logInt(0)},
		{"count", int64(1 << 40), logInt(1 << 40)},
		{"negative", int64(-7), logInt(-7)},
		{"true", true, logBool(true)},
		{"false", false, logBool(false)},
		{"string", "oidc:alice", logString("oidc:alice")},
		{"empty string", "", logString("")},
		{"quotes and unicode", `a "b" \ é 日本`, logString(`a "b" \ é 日本`)},
		{"control", "a\tb\x00", logString("a\tb\x00")},
		{"duration", 4 * time.Millisecond, logDuration(4 * time.Millisecond)},
		{"long duration", time.Hour + time.Second, logDuration(time.Hour + time.Second)},
	}
	line := func(v any) string {
		var out bytes.Buffer
		textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out), textlogger.WithHeader(false))).Info("m", "v", v)
		return strings.TrimSpace(out.String())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := line(tt.ours), line(tt.plain); got != want {
				t.Errorf("logged %s, want %s", got, want)
			}
		})
	}
}

// TestLogStringKeepsOneLine: a string of several lines, a session's reason
// or a path, is quoted onto the request's one line.
func TestLogStringKeepsOneLine(t *testing.T) {
	var out bytes.Buffer
	textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out), textlogger.WithHeader(false))).Info("m", "v", logString("a\nb"))
	if got, want := out.String(), `"m" v="a\nb"`+"\n"; got != want {
		t.Errorf("logged %q, want %q", got, want)
	}
}
