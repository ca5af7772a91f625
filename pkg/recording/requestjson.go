// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// appendRequest appends req as encoding/json marshals it, byte for byte,
// without reflection: every proxied request writes one, and json.Marshal
// spent more on it than the rest of the request log.
func appendRequest(b []byte, req *v1alpha1.RequestLogEntry) []byte {
	b = append(b, `{"time":"`...)
	b = req.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendStringField(b, "way", req.Way, true)
	b = appendStringField(b, "method", req.Method, false)
	b = appendStringField(b, "path", req.Path, false)
	b = appendStringField(b, "query", req.Query, true)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(req.Status), 10)
	b = append(b, `,"bytesIn":`...)
	b = strconv.AppendInt(b, req.BytesIn, 10)
	b = append(b, `,"bytesOut":`...)
	b = strconv.AppendInt(b, req.BytesOut, 10)
	b = appendStringField(b, "duration", req.Duration, false)
	b = appendStringField(b, "userAgent", req.UserAgent, true)
	b = appendStringField(b, "stream", req.Stream, true)
	b = appendStringField(b, "upgrade", req.Upgrade, true)
	b = appendStringField(b, "closeReason", req.CloseReason, true)
	b = appendStringField(b, "replica", req.Replica, true)
	if len(req.Truncated) > 0 {
		b = append(b, `,"truncated":[`...)
		for i, f := range req.Truncated {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"field":`...)
			b = appendJSONString(b, f.Field)
			b = append(b, `,"length":`...)
			b = strconv.AppendInt(b, int64(f.Length), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if req.Lost != 0 {
		b = append(b, `,"lost":`...)
		b = strconv.AppendInt(b, req.Lost, 10)
	}
	if len(req.Moderators) > 0 {
		b = append(b, `,"moderators":[`...)
		for i, m := range req.Moderators {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"user":`...)
			b = appendJSONString(b, m.User)
			b = append(b, `,"from":"`...)
			b = m.From.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `","to":"`...)
			b = m.To.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `"}`...)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendStringField appends ,"name":value; nothing for an empty value when
// omitEmpty.
func appendStringField(b []byte, name, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, value)
}

// appendJSONString appends s quoted as encoding/json quotes a string: <, >
// and & escaped, invalid UTF-8 replaced, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
