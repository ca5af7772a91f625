// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWriteJSONString(t *testing.T) {
	for _, s := range []string{
		"", "plain", "quote \" backslash \\ slash /", "\r\n\t\x00\x1b[0m\x7f", "<html> & é ü 日本 \u2028",
		"broken \xc3 utf-8 \xff\xfe", "\xe6\x97", "emoji 🎉",
	} {
		var buf bytes.Buffer
		writeJSONString(&buf, s)
		var got string
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Errorf("%q: %s is no JSON string: %v", s, buf.Bytes(), err)
			continue
		}
		// encoding/json's own round trip is the reference.
		want, _ := json.Marshal(s)
		var wantString string
		_ = json.Unmarshal(want, &wantString)
		if got != wantString {
			t.Errorf("%q: decodes to %q, encoding/json's to %q", s, got, wantString)
		}
	}
}

func TestUnmask(t *testing.T) {
	mask := [4]byte{1, 2, 3, 4}
	src := []byte("the quick brown fox jumps over the lazy dog")
	for at := range 4 {
		for n := range len(src) {
			dst := make([]byte, n)
			next := unmask(dst, src[:n], mask, at)
			for i := range n {
				if dst[i] != src[i]^mask[(at+i)%4] {
					t.Fatalf("at %d, n %d: byte %d wrong", at, n, i)
				}
			}
			if next != (at+n)%4 {
				t.Fatalf("at %d, n %d: next %d", at, n, next)
			}
		}
	}
}
