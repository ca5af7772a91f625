// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"strconv"
	"time"
	"unicode/utf8"
)

// defaultWidth and defaultHeight size a recording that saw no resize.
const defaultWidth, defaultHeight = 80, 24

// castWriter turns a stream's events into asciicast v2: a header line,
// then one line per event, [seconds, kind, data]. The header waits for the
// first flush, so that it carries the terminal size of the first resize.
type castWriter struct {
	info    StreamInfo
	decoder decoder
	// buf holds what was recorded since the last chunk written.
	buf           bytes.Buffer
	headerWritten bool
	width, height int
	// carry holds the start of a UTF-8 sequence that the next event of
	// the same kind completes: a character split between two messages
	// stays one character.
	carry       map[string][]byte
	lastAt      float64
	events      int
	notUpgraded bool
	chunks      int
	length      int64
	sum         hash.Hash
}

func newCastWriter(info StreamInfo) *castWriter {
	return &castWriter{info: info, carry: map[string][]byte{}, sum: sha256.New()}
}

// feed decodes a segment and appends its events; a stream the target did
// not upgrade has none and is no error.
func (c *castWriter) feed(seg segment) error {
	if c.notUpgraded {
		return nil
	}
	err := c.decoder.feed(seg.fromClient, seg.data, func(e event) { c.event(seg.at, e) })
	if errors.Is(err, errNotUpgraded) {
		c.notUpgraded = true
		return nil
	}
	return err
}

func (c *castWriter) event(at time.Duration, e event) {
	if e.kind == kindOutput || e.kind == kindInput {
		if carry := c.carry[e.kind]; len(carry) > 0 {
			e.data = string(carry) + e.data
			c.carry[e.kind] = nil
		}
		if cut := incompleteSuffix(e.data); cut > 0 {
			c.carry[e.kind] = []byte(e.data[len(e.data)-cut:])
			e.data = e.data[:len(e.data)-cut]
		}
		if e.data == "" {
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
	if c.buf.Cap() == 0 {
		c.buf.Grow(chunkBytes + chunkBytes/4)
	}
	c.buf.WriteByte('[')
	c.buf.WriteString(strconv.FormatFloat(t, 'f', 6, 64))
	c.buf.WriteString(`, "`)
	c.buf.WriteString(e.kind)
	c.buf.WriteString(`", `)
	writeJSONString(&c.buf, e.data)
	c.buf.WriteString("]\n")
	c.events++
}

// pending returns the next chunk: the header first, then the events since
// the last chunk. The last chunk also takes what carry holds.
func (c *castWriter) pending(final bool) []byte {
	if final {
		for _, kind := range []string{kindOutput, kindInput} {
			if rest := c.carry[kind]; len(rest) > 0 {
				c.carry[kind] = nil
				c.event(time.Duration(c.lastAt*float64(time.Second)), event{kind, string(rest)})
			}
		}
	}
	if c.notUpgraded && !c.headerWritten {
		return nil
	}
	if !c.headerWritten && (c.buf.Len() > 0 || final) {
		header := c.header()
		events := c.buf.Bytes()
		c.buf = bytes.Buffer{}
		c.buf.Write(header)
		c.buf.Write(events)
		c.headerWritten = true
	}
	return c.buf.Bytes()
}

// written takes note that chunk, from pending, is stored.
func (c *castWriter) written(chunk []byte) {
	c.chunks++
	c.length += int64(len(chunk))
	c.sum.Write(chunk)
	c.buf.Reset()
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
	if c.info.TTY {
		h["env"] = map[string]string{"TERM": "xterm-256color"}
	}
	data, _ := json.Marshal(h)
	return append(data, '\n')
}

func (c *castWriter) manifest(end time.Time) Manifest {
	m := Manifest{Stream: c.info.Stream, Protocol: c.decoder.Protocol(), EndTime: end,
		Chunks: c.chunks, Length: c.length, SHA256: hex.EncodeToString(c.sum.Sum(nil)), Events: c.events}
	if c.notUpgraded {
		m.Failed = errNotUpgraded.Error()
	}
	return m
}

// incompleteSuffix is how many bytes at the end of s start a UTF-8
// sequence that is not complete yet.
func incompleteSuffix(s string) int {
	for n := 1; n <= 3 && n <= len(s); n++ {
		c := s[len(s)-n]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}

// writeJSONString writes s as a JSON string, as encoding/json does
// (invalid UTF-8 becomes U+FFFD) but without escaping HTML, whose
// characters a terminal recording is full of, and fast over plain ASCII.
func writeJSONString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(s[start:i])
			buf.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		i += size
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}

// parseSize reads "WxH".
func parseSize(s string) (int, int, bool) {
	i := bytes.IndexByte([]byte(s), 'x')
	if i < 0 {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(s[:i])
	h, err2 := strconv.Atoi(s[i+1:])
	return w, h, err1 == nil && err2 == nil
}
