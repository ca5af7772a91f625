// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"strconv"
	"time"
)

// logInt, logBool, logString and logDuration are the values in the log
// line of every proxied request. klog's text format writes a value of a
// type it does not know, a plain int64 or bool included, through
// encoding/json, the deepest call of a proxied request: there the
// handler's fresh goroutine had to grow and copy its stack; and it copies a
// string twice before it quotes it. These write themselves into klog's
// buffer (WriteText, as klog.ObjectRef does), the same text, and structured
// loggers get the plain value (MarshalLog).
type (
	logInt      int64
	logBool     bool
	logString   string
	logDuration time.Duration
)

// WriteText writes the number as encoding/json would.
func (n logInt) WriteText(b *bytes.Buffer) {
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(n), 10))
}

// MarshalLog is the number for structured loggers.
func (n logInt) MarshalLog() any { return int64(n) }

// WriteText writes true or false, as encoding/json would.
func (v logBool) WriteText(b *bytes.Buffer) {
	b.Write(strconv.AppendBool(b.AvailableBuffer(), bool(v)))
}

// MarshalLog is the flag for structured loggers.
func (v logBool) MarshalLog() any { return bool(v) }

// WriteText writes the string quoted, as klog writes a string of one line.
// A string of several lines, which klog would write over several lines,
// is quoted too: the request's line stays one line whatever a path or a
// session's reason holds.
func (s logString) WriteText(b *bytes.Buffer) {
	b.Write(strconv.AppendQuote(b.AvailableBuffer(), string(s)))
}

// MarshalLog is the string for structured loggers.
func (s logString) MarshalLog() any { return string(s) }

// WriteText writes the duration quoted, as klog writes a fmt.Stringer.
func (d logDuration) WriteText(b *bytes.Buffer) {
	b.WriteByte('"')
	b.WriteString(time.Duration(d).String())
	b.WriteByte('"')
}

// MarshalLog is the duration for structured loggers.
func (d logDuration) MarshalLog() any { return time.Duration(d) }
