// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/clustergate/clustergate/pkg/recording"
)

// spdyHeaderSize is the size of every SPDY/3.1 frame's header, control
// and data frames alike: its last 24 bits are the length of what follows.
const spdyHeaderSize = 8

// spdyStatusLinger is how long a SPDY client gets to take the Status from
// its error stream before the connection closes: spdystream hands frames
// to workers and drops what they did not take when the connection ends.
const spdyStatusLinger = 100 * time.Millisecond

// maxStatusMessage bounds the message of the Status sent on a SPDY stream.
const maxStatusMessage = 4 << 10

// feedSPDY follows SPDY frames: an 8-byte header, then as many bytes as its
// length says.
func (f *frameTracker) feedSPDY(b []byte) {
	for len(b) > 0 {
		if f.remaining > 0 {
			n := min(uint64(len(b)), f.remaining)
			f.remaining -= n
			b = b[n:]
			continue
		}
		n := min(spdyHeaderSize-len(f.header), len(b))
		f.header = append(f.header, b[:n]...)
		b = b[n:]
		if len(f.header) == spdyHeaderSize {
			f.remaining = uint64(f.header[5])<<16 | uint64(f.header[6])<<8 | uint64(f.header[7])
			f.header = f.header[:0]
		}
	}
}

// spdyStatusFrame is the data frame, with FIN, that tells a SPDY client
// why its stream ends, on the error stream it reads how the command ended
// from (errorStream): a Status (v4.channel.k8s.io) or plain text (older
// protocols), as a kubelet writes it. It is nil without an error stream.
func spdyStatusFrame(protocol string, errorStream uint32, why error) []byte {
	if errorStream == 0 {
		return nil
	}
	payload := errorStreamPayload(protocol, why)
	const dataFlagFin = 0x01
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, spdyHeaderSize+len(payload)), errorStream&0x7fffffff)
	frame = append(frame, dataFlagFin, byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload)))
	return append(frame, payload...)
}

// spdyErrorStream is the client's error stream a SPDY stream that ends
// with why can say so on: the one its failed recording names, or the one
// the relay of a moderated stream learnt (0: none).
func (c *upgradedConn) spdyErrorStream(why error) uint32 {
	var failure *recording.Failure
	if errors.As(why, &failure) && failure.SPDYErrorStream != 0 {
		return failure.SPDYErrorStream
	}
	return c.errorStream.Load()
}
