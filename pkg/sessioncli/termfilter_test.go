// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// filterAll filters the chunks, one write each, and returns what passed
// and how many sequences were dropped.
func filterAll(t testing.TB, chunks ...[]byte) (string, int) {
	t.Helper()
	var out bytes.Buffer
	f := newTermFilter(&out)
	for _, c := range chunks {
		if n, err := f.Write(c); n != len(c) || err != nil {
			t.Fatalf("Write = %d, %v; want %d", n, err, len(c))
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), f.Dropped()
}

// TestTermFilter filters what a recorded program could write: whatever
// draws passes byte for byte, whatever acts on the auditor's terminal is
// dropped and counted, in its 7-bit and its C1 forms, however the stream
// is cut into writes (events).
func TestTermFilter(t *testing.T) {
	tests := []struct {
		name, in, want string
		dropped        int
	}{
		// What draws.
		{name: "UTF-8 text", in: "héllo wörld ✓ 日本 🙂\r\n", want: "héllo wörld ✓ 日本 🙂\r\n"},
		{name: "text whose UTF-8 holds C1 bytes", in: "АБВ ě ð", want: "АБВ ě ð"},
		{name: "C0 controls", in: "a\tb\bc\x07\r\n\x0e\x0f", want: "a\tb\bc\x07\r\n\x0e\x0f"},
		{name: "colours", in: "\x1b[1;31mred\x1b[0m \x1b[38;2;255;0;0mx\x1b[38:2::255:0:0my\x1b[m",
			want: "\x1b[1;31mred\x1b[0m \x1b[38;2;255;0;0mx\x1b[38:2::255:0:0my\x1b[m"},
		{name: "cursor moves", in: "\x1b[H\x1b[10;20H\x1b[5A\x1b[2C\x1b7\x1b8\x1b[s\x1b[u\x1b[3G\x1b[4d",
			want: "\x1b[H\x1b[10;20H\x1b[5A\x1b[2C\x1b7\x1b8\x1b[s\x1b[u\x1b[3G\x1b[4d"},
		{name: "clear screen, erase, cursor shown", in: "\x1b[2J\x1b[K\x1b[?25l\x1b[?25h\x1b[3X\x1b[2P",
			want: "\x1b[2J\x1b[K\x1b[?25l\x1b[?25h\x1b[3X\x1b[2P"},
		{name: "alternate screen", in: "\x1b[?1049h\x1b[?1049l\x1b[?47h\x1b[?1047l", want: "\x1b[?1049h\x1b[?1049l\x1b[?47h\x1b[?1047l"},
		{name: "scrolling", in: "\x1b[1;20r\x1bM\x1bD\x1bE\x1b[3S\x1b[2T\x1b[r", want: "\x1b[1;20r\x1bM\x1bD\x1bE\x1b[3S\x1b[2T\x1b[r"},
		{name: "bracketed paste, synchronized output", in: "\x1b[?2004h\x1b[?2026h\x1b[?2026l\x1b[?2004l",
			want: "\x1b[?2004h\x1b[?2026h\x1b[?2026l\x1b[?2004l"},
		{name: "line drawing charset, keypad", in: "\x1b(0lqk\x1b(B\x1b)0\x1b=\x1b>", want: "\x1b(0lqk\x1b(B\x1b)0\x1b=\x1b>"},
		{name: "cursor style, soft and full reset", in: "\x1b[2 q\x1b[!p\x1bc", want: "\x1b[2 q\x1b[!p\x1bc"},
		{name: "insert mode, newline mode", in: "\x1b[4h\x1b[20l", want: "\x1b[4h\x1b[20l"},
		{name: "C0 within a sequence acts", in: "\x1b[1\r\nm", want: "\r\n\x1b[1m"},
		{name: "C1 CSI that draws, as its 7-bit form", in: "\u009b1mx\x9b0m", want: "\x1b[1mx\x1b[0m"},

		// What acts on the terminal.
		{name: "OSC 52 clipboard, BEL", in: "a\x1b]52;c;ZXZpbA==\x07b", want: "ab", dropped: 1},
		{name: "OSC title, ST", in: "\x1b]0;title\x1b\\x\x1b]2;t\x07", want: "x", dropped: 2},
		{name: "OSC 8 hyperlink", in: "\x1b]8;;http://e.example\x1b\\link\x1b]8;;\x1b\\", want: "link", dropped: 2},
		{name: "OSC ended by another sequence", in: "\x1b]0;t\x1b[1mx", want: "\x1b[1mx", dropped: 1},
		{name: "DCS DECRQSS, XTGETTCAP", in: "\x1bP$qm\x1b\\\x1bP+q544e\x1b\\", dropped: 2},
		{name: "sixel", in: "\x1bPq#0;2;0;0;0#0~~-\x1b\\", dropped: 1},
		{name: "APC, PM, SOS", in: "\x1b_Gf=100;AAAA\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\", dropped: 3},
		{name: "device status reports", in: "\x1b[6n\x1b[5n\x1b[?6n\x1b[?996n", dropped: 4},
		{name: "device attributes", in: "\x1b[c\x1b[0c\x1b[>c\x1b[=c", dropped: 4},
		{name: "mode reports", in: "\x1b[?2004$p\x1b[4$p", dropped: 2},
		{name: "window operations and reports", in: "\x1b[14t\x1b[8;100;200t\x1b[21t\x1b[2t\x1b[22;0t", dropped: 5},
		{name: "terminal parameters, version, checksum", in: "\x1b[x\x1b[>q\x1b[1;1;1;1;1;1*y", dropped: 3},
		{name: "DECID, answerback", in: "\x1bZ\x05", dropped: 2},
		{name: "mouse and focus reporting", in: "\x1b[?1000h\x1b[?1006;1000h\x1b[?1004h\x1b[?9l\x1b[?01000h", dropped: 5},
		{name: "keyboard modes", in: "\x1b[>1u\x1b[?u\x1b[<u\x1b[>4;2m\x1b[2h\x1b[12l\x1b[1q", dropped: 7},
		{name: "title modes, 8-bit answers, encoding", in: "\x1b[>3t\x1b G\x1b%G", dropped: 3},
		{name: "printing, status line", in: "\x1b[5i\x1b[1$}\x1b[2$~", dropped: 3},

		// C1 forms, as UTF-8 and as 8-bit bytes.
		{name: "C1 OSC 52", in: "\u009d52;c;ZXZpbA==\u009cok", want: "ok", dropped: 1},
		{name: "C1 DCS, PM, APC, SOS", in: "\u0090$qm\u009c\u009ex\u009c\u009fx\u009c\u0098x\u009c", dropped: 4},
		{name: "C1 DSR", in: "\u009b6n", dropped: 1},
		{name: "8-bit OSC, DCS, CSI", in: "\x9d0;t\x07x\x90q\x9c\x9b6n", want: "x", dropped: 3},
		{name: "C1 ST alone, DECID", in: "\u009c\u009a", dropped: 2},

		// Garbage.
		{name: "marker not first", in: "\x1b[1?2m", dropped: 1},
		{name: "parameter after intermediate", in: "\x1b[1 2m", dropped: 1},
		{name: "cut by another sequence", in: "\x1b[1\x1b[2m", want: "\x1b[2m", dropped: 1},
		{name: "cancelled", in: "\x1b[1\x18x\x1b(\x1ay", want: "xy", dropped: 2},
		{name: "non-ASCII within a sequence", in: "\x1b[1éx", want: "éx", dropped: 1},
		{name: "overlong", in: "\x1b[" + strings.Repeat("1;", 200) + "m", dropped: 1},
		{name: "huge mode number", in: "\x1b[?4294968296h", dropped: 1},
		{name: "unfinished at the end", in: "a\x1b[1", want: "a", dropped: 1},
		{name: "unfinished string at the end", in: "a\x1b]52;c;", want: "a", dropped: 1},
		{name: "invalid UTF-8 as U+FFFD", in: "\xff\xfe\xc0a\xc2\x1b[1m", want: "\ufffd\ufffd\ufffda\ufffd\x1b[1m"},
		{name: "UTF-8 cut at the end", in: "a\xe2\x9c", want: "a\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			check := func(how string, got string, dropped int) {
				t.Helper()
				if got != tt.want || dropped != tt.dropped {
					t.Errorf("%s: got %q, %d dropped; want %q, %d", how, got, dropped, tt.want, tt.dropped)
				}
			}
			got, dropped := filterAll(t, in)
			check("in one write", got, dropped)
			for i := 1; i < len(in); i++ {
				got, dropped := filterAll(t, in[:i], in[i:])
				check("cut at "+strconv.Itoa(i), got, dropped)
			}
			var bytewise [][]byte
			for i := range in {
				bytewise = append(bytewise, in[i:i+1])
			}
			got, dropped = filterAll(t, bytewise...)
			check("a byte a write", got, dropped)
		})
	}
}

// FuzzTermFilter checks that no input, however cut, gets a string
// introducer (OSC, DCS, SOS, PM, APC, 7-bit or C1) through, that filtering
// does not depend on where the writes are cut, and that what passes passes
// again unchanged.
func FuzzTermFilter(f *testing.F) {
	for _, seed := range []string{"\x1b]52;c;eA==\x07", "\x1bP$qm\x1b\\", "\u009d0;t\u009c", "\x9b6n\x1b[1m", "\x1b[?1000h\x1b[?1049h",
		"\xc2\x1b\x9d", "АБВ\x1b(0q", "\x1b\x1b]\x1b\\\x1bX", "\x1b[" + strings.Repeat("9", 300) + "m"} {
		f.Add([]byte(seed), uint(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint) {
		whole, dropped := filterAll(t, in)
		c := int(cut % uint(len(in)+1))
		if cutOut, cutDropped := filterAll(t, in[:c], in[c:]); cutOut != whole || cutDropped != dropped {
			t.Errorf("cut at %d: %q, %d dropped; in one write: %q, %d", c, cutOut, cutDropped, whole, dropped)
		}
		for _, introducer := range []string{"\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX"} {
			if strings.Contains(whole, introducer) {
				t.Errorf("%q passed as %q, with %q", in, whole, introducer)
			}
		}
		for i := 0; i < len(whole); {
			r, size := utf8.DecodeRuneInString(whole[i:])
			if r == utf8.RuneError && size == 1 {
				r = rune(whole[i])
			}
			if strings.ContainsRune("\u0090\u0098\u009b\u009c\u009d\u009e\u009f", r) {
				t.Errorf("%q passed as %q, with C1 %#x", in, whole, r)
			}
			i += size
		}
		if again, n := filterAll(t, []byte(whole)); again != whole || n != 0 {
			t.Errorf("%q passed as %q, which filters to %q, %d dropped", in, whole, again, n)
		}
	})
}
