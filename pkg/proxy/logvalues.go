// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"strconv"
)

// logInt and logBool are a count and a flag in the log line of every
// proxied request. klog's text format writes a value of a type it does not
// know, a plain int64 or bool included, through encoding/json, the deepest
// call of a proxied request: there the handler's fresh goroutine had to
// grow and copy its stack. These write themselves (WriteText, as
// klog.ObjectRef does), the same text, and structured loggers get the
// plain value (MarshalLog).
type (
	logInt  int64
	logBool bool
)

// WriteText writes the number as encoding/json would.
func (n logInt) WriteText(b *bytes.Buffer) { b.WriteString(strconv.FormatInt(int64(n), 10)) }

// MarshalLog is the number for structured loggers.
func (n logInt) MarshalLog() any { return int64(n) }

// WriteText writes true or false, as encoding/json would.
func (v logBool) WriteText(b *bytes.Buffer) { b.WriteString(strconv.FormatBool(bool(v))) }

// MarshalLog is the flag for structured loggers.
func (v logBool) MarshalLog() any { return bool(v) }
