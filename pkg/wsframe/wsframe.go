// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package wsframe reads the headers of WebSocket frames (RFC 6455) as they
// pass through the proxy, for those who follow a stream frame by frame:
// the proxy, to close it between two frames, and the recorder, to decode it.
package wsframe

import "encoding/binary"

// HeaderSize is the length of a frame header that starts with h, once h
// holds enough of it to tell; 0 before.
func HeaderSize(h []byte) int {
	if len(h) < 2 {
		return 0
	}
	size := 2
	switch h[1] & 0x7f {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	if h[1]&0x80 != 0 {
		size += 4 // masking key
	}
	return size
}

// PayloadSize is the payload length a complete frame header h announces.
func PayloadSize(h []byte) uint64 {
	switch n := h[1] & 0x7f; n {
	case 126:
		return uint64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		return binary.BigEndian.Uint64(h[2:10])
	default:
		return uint64(n)
	}
}
