// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestReplaySaysUnverified: a recording the server served unverified is
// played with a warning on standard error that says why.
func TestReplaySaysUnverified(t *testing.T) {
	for _, tt := range []struct {
		name, header, want string
	}{
		{name: "verified", header: `{"version":2,"clustergateVerification":"verified"}`},
		{name: "no verification", header: `{"version":2}`},
		{name: "unverified", header: `{"version":2,"clustergateVerification":"unverified: it has no manifest"}`,
			want: "Warning: this recording is unverified: it has no manifest\n"},
		{name: "live", header: `{"version":2,"clustergateVerification":"live"}`, want: "Warning: this recording is live\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := replay(context.Background(), strings.NewReader(tt.header+"\n"+`[0.1, "o", "hi"]`+"\n"), 0, &out, &errOut); err != nil {
				t.Fatal(err)
			}
			if out.String() != "hi" || errOut.String() != tt.want {
				t.Errorf("played %q, said %q; want %q", out.String(), errOut.String(), tt.want)
			}
		})
	}
}
