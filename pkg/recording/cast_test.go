// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAppendJSONStringContent(t *testing.T) {
	inputs := []string{
		"", "plain", "quote \" backslash \\ slash /", "\r\n\t\x00\x1b[0m\x7f", "<html> & é ü 日本 \u2028",
		"broken \xc3 utf-8 \xff\xfe", "\xe6\x97", "emoji 🎉", "exactly8", "seven7\n", "0123456789abcdef\"",
		"\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond U+10FFFF", "\xc0\xaf overlong", "é" + strings.Repeat("a", 15) + "\x1f",
	}
	// Random bytes, and random picks from what needs care, at every
	// length and alignment around the eight-byte steps.
	rng := rand.New(rand.NewPCG(1, 2))
	const tricky = "a\"\\\x00\x1f\x7f\x80\xbf\xc3\xa9\xe6\x97\xa5\xf0\x9f\x8e\x89 \r\n"
	for n := range 40 {
		random, picked := make([]byte, n), make([]byte, n)
		for i := range n {
			random[i] = byte(rng.IntN(256))
			picked[i] = tricky[rng.IntN(len(tricky))]
		}
		inputs = append(inputs, string(random), string(picked))
	}
	for _, s := range inputs {
		checkJSONStringContent(t, s)
	}
}

func FuzzAppendJSONStringContent(f *testing.F) {
	for _, s := range []string{"", "plain text\r\n", "\xc3(\xff\"\\\x00", "日本語 🎉 \u2028"} {
		f.Add(s)
	}
	f.Fuzz(checkJSONStringContent)
}

// checkJSONStringContent checks that appendJSONStringContent makes a JSON
// string of s that decodes as encoding/json's own encoding of s does.
func checkJSONStringContent(t *testing.T, s string) {
	quoted := append(appendJSONStringContent([]byte(`"`), []byte(s)), '"')
	var got string
	if err := json.Unmarshal(quoted, &got); err != nil {
		t.Errorf("%q: %s is no JSON string: %v", s, quoted, err)
		return
	}
	want, _ := json.Marshal(s)
	var wantString string
	_ = json.Unmarshal(want, &wantString)
	if got != wantString {
		t.Errorf("%q: decodes to %q, encoding/json's to %q", s, got, wantString)
	}
	if !utf8.Valid(quoted) {
		t.Errorf("%q: %q is not valid UTF-8", s, quoted)
	}
}

// BenchmarkAppendJSONStringContent escapes terminal output: lines of
// ASCII ending in CR LF, and the same with some UTF-8 in each line.
func BenchmarkAppendJSONStringContent(b *testing.B) {
	for _, tt := range []struct{ name, line string }{
		{"ascii", "drwxr-xr-x 2 root root 4096 Dec  1 22:40 bin\r\n"},
		{"utf8", "-rw-r--r-- 1 root root   12 Dec  1 22:40 café 日本\r\n"},
	} {
		data := []byte(strings.Repeat(tt.line, 32<<10/len(tt.line)))
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			dst := make([]byte, 0, 2*len(data))
			for range b.N {
				dst = appendJSONStringContent(dst[:0], data)
			}
		})
	}
}

func TestCastWriterCoalescesOutput(t *testing.T) {
	ms := time.Millisecond
	type fed struct {
		at   time.Duration
		kind string
		data string
	}
	for _, tt := range []struct {
		name string
		fed  []fed
		want string
	}{{
		name: "output within the window joins",
		fed:  []fed{{0, kindOutput, "a"}, {ms, kindOutput, "b\n"}, {2 * ms, kindOutput, "c"}},
		want: `[0.000000, "o", "ab\nc"]` + "\n",
	}, {
		name: "the window counts from the event's start",
		fed:  []fed{{0, kindOutput, "a"}, {ms, kindOutput, "b"}, {3 * ms, kindOutput, "c"}},
		want: `[0.000000, "o", "ab"]` + "\n" + `[0.003000, "o", "c"]` + "\n",
	}, {
		name: "input between ends it",
		fed:  []fed{{0, kindOutput, "a"}, {0, kindInput, "x"}, {ms, kindOutput, "b"}, {ms, kindInput, "y"}},
		want: `[0.000000, "o", "a"]` + "\n" + `[0.000000, "i", "x"]` + "\n" + `[0.001000, "o", "b"]` + "\n" + `[0.001000, "i", "y"]` + "\n",
	}, {
		name: "input does not join",
		fed:  []fed{{0, kindInput, "a"}, {0, kindInput, "b"}},
		want: `[0.000000, "i", "a"]` + "\n" + `[0.000000, "i", "b"]` + "\n",
	}, {
		name: "a character split between parts stays one",
		fed:  []fed{{0, kindOutput, "h\xc3"}, {ms, kindOutput, "\xa9!"}},
		want: `[0.000000, "o", "hé!"]` + "\n",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			c := &castWriter{}
			for _, f := range tt.fed {
				c.event(f.at, event{f.kind, []byte(f.data)})
			}
			if got := string(c.buf); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCastWriterStartsNewEventsAfterAChunk(t *testing.T) {
	c := &castWriter{}
	c.event(0, event{kindOutput, []byte("a")})
	c.pending(false)
	c.written()
	c.event(time.Millisecond, event{kindOutput, []byte("b")})
	if got, want := string(c.pending(false)), `[0.001000, "o", "b"]`+"\n"; got != want {
		t.Errorf("second chunk %q, want %q", got, want)
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
