// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2/textlogger"
)

// TestLogValuesReadAsPlainValues: klog's text format writes logInt and
// logBool as it writes an int64 and a bool.
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
