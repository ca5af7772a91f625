// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// defaultWidth and defaultHeight size a recording that saw no resize.
const defaultWidth, defaultHeight = 80, 24

// coalesceWindow is how soon after an output event's start more output,
// with no other event between, joins that event: a screenful the target
// wrote in many small writes becomes one event, timed at its first part,
// which replays no differently (players draw frames far slower) and costs
// one line instead of many.
const coalesceWindow = 2 * time.Millisecond

// eventEnd closes an event's line; an event that more output joins loses
// it again.
const eventEnd = "\"]\n"

// castWriter turns a stream's events into asciicast v2: a header line,
// then one line per event, [seconds, kind, data]. The header waits for the
// first chunk with events, so that it carries the terminal size of the
// first resize.
type castWriter struct {
	info v1alpha1.RecordingInfo
	// verification is what the reader verified of the recording, for the
	// header.
	verification string
	decoder      decoder
	// buf holds what was recorded since the last chunk written.
	buf           []byte
	headerWritten bool
	width, height int
	// carry holds, by direction, the start of a UTF-8 sequence that the
	// next event of the same kind completes: a character split between
	// two messages stays one character. joined is where an event and
	// its carry are put together.
	carry  [2][]byte
	joined []byte
	lastAt float64
	// open is the kind of the last event in buf, while output may still
	// join it; openAt is its time.
	open        string
	openAt      float64
	notUpgraded bool
}

// renderCast builds the asciicast of a recording from its n chunks, which
// chunk returns in order, and writes it to w. Each chunk ends what output
// may join, as the chunks ended it when the asciicast was written as the
// stream ran; the last one also flushes what the stream left incomplete.
// A stream that stops decoding renders up to there.
func renderCast(c *castWriter, n int, chunk func(i int) ([]byte, error), w io.Writer) error {
	for i := range n {
		data, err := chunk(i)
		if err != nil {
			return err
		}
		if err := c.renderChunk(i, data, i == n-1, w); err != nil {
			return err
		}
	}
	return nil
}

// renderChunk decodes chunk i and writes the events it completes to w;
// final flushes what the stream left incomplete.
func (c *castWriter) renderChunk(i int, data []byte, final bool, w io.Writer) error {
	err := readCapture(data, func(at time.Duration, fromClient bool, b []byte) error {
		// The decoder keeps its error; the manifest says why.
		_ = c.feed(at, fromClient, b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("chunk %d: %w", i+1, err)
	}
	return c.writePending(final, w)
}

// writePending writes what pending returns, if anything.
func (c *castWriter) writePending(final bool, w io.Writer) error {
	if out := c.pending(final); len(out) > 0 {
		if _, err := w.Write(out); err != nil {
			return err
		}
		c.written()
	}
	return nil
}

// feed decodes what the relay carried and appends its events; a stream
// the target did not upgrade has none and is no error.
func (c *castWriter) feed(at time.Duration, fromClient bool, data []byte) error {
	if c.notUpgraded {
		return nil
	}
	err := c.decoder.feed(fromClient, data, func(e event) { c.event(at, e) })
	if errors.Is(err, errNotUpgraded) {
		c.notUpgraded = true
		return nil
	}
	return err
}

// carryIndex is where carry keeps an event kind's incomplete character;
// -1 for kinds without text.
func carryIndex(kind string) int {
	switch kind {
	case kindOutput:
		return 0
	case kindInput:
		return 1
	}
	return -1
}

func (c *castWriter) event(at time.Duration, e event) {
	if i := carryIndex(e.kind); i >= 0 {
		if carry := c.carry[i]; len(carry) > 0 {
			c.joined = append(append(c.joined[:0], carry...), e.data...)
			e.data = c.joined
			c.carry[i] = carry[:0]
		}
		if cut := incompleteSuffix(e.data); cut > 0 {
			c.carry[i] = append(c.carry[i][:0], e.data[len(e.data)-cut:]...)
			e.data = e.data[:len(e.data)-cut]
		}
		if len(e.data) == 0 {
			return
		}
	}
	if e.kind == kindResize && !c.headerWritten && c.width == 0 {
		if w, h, ok := parseSize(e.data); ok {
			c.width, c.height = w, h
		}
	}
	// Events of the two directions are decoded in the order the relay saw
	// them; times never go back.
	t := max(at.Seconds(), c.lastAt)
	c.lastAt = t
	if cap(c.buf) == 0 {
		c.buf = make([]byte, 0, chunkBytes+chunkBytes/4)
	}
	if e.kind == kindOutput && c.open == kindOutput && t-c.openAt <= coalesceWindow.Seconds() {
		c.buf = c.buf[:len(c.buf)-len(eventEnd)]
	} else {
		c.buf = append(c.buf, '[')
		c.buf = strconv.AppendFloat(c.buf, t, 'f', 6, 64)
		c.buf = append(c.buf, `, "`...)
		c.buf = append(c.buf, e.kind...)
		c.buf = append(c.buf, `", "`...)
		c.open, c.openAt = e.kind, t
	}
	c.buf = appendJSONStringContent(c.buf, e.data)
	c.buf = append(c.buf, eventEnd...)
}

// pending returns the next chunk: the header first, then the events since
// the last chunk. The last chunk also takes what carry holds.
func (c *castWriter) pending(final bool) []byte {
	if final {
		for _, kind := range []string{kindOutput, kindInput} {
			if rest := c.carry[carryIndex(kind)]; len(rest) > 0 {
				c.carry[carryIndex(kind)] = nil
				c.event(time.Duration(c.lastAt*float64(time.Second)), event{kind, rest})
			}
		}
	}
	if c.notUpgraded && !c.headerWritten {
		return nil
	}
	if !c.headerWritten && (len(c.buf) > 0 || final) {
		// The header goes in front, in buf's own memory, which stays
		// for the next chunks.
		header, events := c.header(), len(c.buf)
		c.buf = append(c.buf, header...)
		copy(c.buf[len(header):], c.buf[:events])
		copy(c.buf, header)
		c.headerWritten = true
	}
	return c.buf
}

// written takes note that the chunk from pending is written; the events
// of the next chunk are new lines.
func (c *castWriter) written() {
	c.buf = c.buf[:0]
	c.open = ""
}

func (c *castWriter) header() []byte {
	width, height := c.width, c.height
	if width == 0 {
		width, height = defaultWidth, defaultHeight
	}
	h := map[string]any{
		"version": 2, "width": width, "height": height, "timestamp": c.info.StartTime.Unix(),
		"title":       c.info.Namespace + "/" + c.info.Name + " " + c.info.Stream,
		"clustergate": c.info,
	}
	if c.verification != "" {
		// The file keeps what the server verified of it, wherever it goes.
		h["clustergateVerification"] = c.verification
	}
	if c.info.TTY {
		h["env"] = map[string]string{"TERM": "xterm-256color"}
	}
	data, _ := json.Marshal(h)
	return append(data, '\n')
}

// incompleteSuffix is how many bytes at the end of s start a UTF-8
// sequence that is not complete yet.
func incompleteSuffix(s []byte) int {
	for n := 1; n <= 3 && n <= len(s); n++ {
		c := s[len(s)-n]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}

// jsonEscapes is what a JSON string has in place of each ASCII byte that
// cannot stand for itself; "" for those that can.
var jsonEscapes = func() (t [utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for c := range 0x20 {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	t['\n'], t['\r'], t['\t'], t['"'], t['\\'] = `\n`, `\r`, `\t`, `\"`, `\\`
	return t
}()

// Bit patterns that find, eight bytes at a time, a byte that a JSON
// string must escape or that starts a multi-byte character.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialBytes has the high bit set of each of the eight bytes of w,
// little endian, that is a control character, '"', '\\' or outside
// ASCII. Bytes above the first such byte may be set without being one
// (a borrow runs into them); the first one set is exact.
func specialBytes(w uint64) uint64 {
	zeroIn := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	below0x20 := (w - 0x20*ones) & ^w & highs
	return w&highs | below0x20 | zeroIn(w^'"'*ones) | zeroIn(w^'\\'*ones)
}

// appendJSONStringContent appends s as the inside of a JSON string, as
// encoding/json writes it, invalid UTF-8 as U+FFFD, except that HTML's
// characters, which a terminal recording is full of, stay as they are.
// Plain ASCII passes eight bytes at a time.
func appendJSONStringContent(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := specialBytes(binary.LittleEndian.Uint64(s[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if esc := jsonEscapes[c]; esc != "" {
				dst = append(append(dst, s[start:i]...), esc...)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			start = i + 1
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// parseSize reads "WxH".
func parseSize(s []byte) (int, int, bool) {
	i := bytes.IndexByte(s, 'x')
	if i < 0 {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(string(s[:i]))
	h, err2 := strconv.Atoi(string(s[i+1:]))
	return w, h, err1 == nil && err2 == nil
}
