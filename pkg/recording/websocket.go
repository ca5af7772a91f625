// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/clustergate/clustergate/pkg/wsframe"
)

// webSocketDecoder decodes the channel protocols of Kubernetes over
// WebSocket (channel.k8s.io, v4 and v5, and their base64 forms): each
// message starts with its channel, a byte (a digit in base64 forms).
//
// The client's frames are decoded as the target reads them: k8s.io/streaming's
// wsstream over golang.org/x/net/websocket, in kube-apiserver's stream
// translator and in the kubelet. There every data frame is a message of its
// own whose first byte is its channel (continuation frames are not
// reassembled), reserved opcodes are data, RSV bits are ignored, an
// unmasked frame or a close frame ends the stream and a frame over 32 MiB
// ends it too. Whatever a legitimate client never sends and the target
// might read otherwise than the recording fails the decoding, and with it
// the recording. The target's frames are decoded as the client (gorilla's
// websocket, in client-go) reads them: messages of one or more frames.
type webSocketDecoder struct {
	base64     bool
	fromClient wsDirection
	toClient   wsDirection
}

func newWebSocketDecoder(subprotocol string) *webSocketDecoder {
	b64 := strings.Contains(subprotocol, "base64")
	return &webSocketDecoder{base64: b64, fromClient: wsDirection{base64: b64, client: true}, toClient: wsDirection{base64: b64}}
}

// maxClientFrame is the largest frame payload golang.org/x/net/websocket
// reads (its DefaultMaxPayloadBytes, which wsstream keeps): a larger one
// ends the target's reading.
const maxClientFrame = 32 << 20

func (w *webSocketDecoder) feed(fromClient bool, b []byte, emit func(event)) error {
	if fromClient {
		return w.fromClient.feed(b, emit)
	}
	return w.toClient.feed(b, emit)
}

// wsDirection follows the frames of one direction.
type wsDirection struct {
	base64 bool
	// client is set for the client's frames, read frame by frame as the
	// target reads them.
	client bool
	// closing is set while in the client's close frame, closed after it:
	// the target reads nothing more.
	closing, closed bool
	header          []byte
	// remaining payload bytes of the current frame, its mask and where in
	// the mask the next byte is.
	remaining uint64
	masked    bool
	mask      [4]byte
	maskAt    int
	// control is set while in a control frame, whose payload is skipped;
	// fin is the current frame's FIN bit.
	control, fin bool
	// inMessage is set between a data frame that starts a message and the
	// end of its last frame; channel is the message's (-1 before its first
	// byte), held collects what is decoded whole.
	inMessage bool
	channel   int
	held      []byte
	// scratch holds unmasked payload, reused.
	scratch []byte
}

func (d *wsDirection) feed(b []byte, emit func(event)) error {
	for len(b) > 0 {
		if d.closed {
			return errors.New("websocket: bytes after the client's close frame")
		}
		if d.remaining == 0 {
			d.header = append(d.header, b[0])
			b = b[1:]
			size := wsframe.HeaderSize(d.header)
			if size == 0 || len(d.header) < size {
				continue
			}
			if err := d.startFrame(emit); err != nil {
				return err
			}
			continue
		}
		n := min(uint64(len(b)), d.remaining)
		payload := b[:n]
		b = b[n:]
		d.remaining -= n
		if err := d.payload(payload, emit); err != nil {
			return err
		}
		if d.remaining == 0 {
			if err := d.endFrame(emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// startFrame reads a complete frame header.
func (d *wsDirection) startFrame(emit func(event)) error {
	h := d.header
	d.header = d.header[:0]
	opcode := h[0] & 0x0f
	d.fin = h[0]&0x80 != 0
	d.masked = h[1]&0x80 != 0
	d.remaining = wsframe.PayloadSize(h)
	if d.masked {
		copy(d.mask[:], h[len(h)-4:])
	}
	d.maskAt = 0
	d.control = opcode >= 8
	switch {
	case h[0]&0x70 != 0:
		return errors.New("websocket: RSV bits set")
	case h[1]&0x7f == 127 && h[2]&0x80 != 0:
		// RFC 6455 forbids it; x/net clears the bit and reads another length.
		return errors.New("websocket: 64-bit length with its top bit set")
	case d.client && !d.masked:
		return errors.New("websocket: unmasked client frame")
	case opcode > 10 || (opcode > 2 && opcode < 8):
		return errors.New("websocket: reserved opcode")
	case d.control:
		if !d.fin || d.remaining > 125 {
			return errors.New("websocket: malformed control frame")
		}
		d.closing = d.client && opcode == 8
	case d.client:
		// The target takes every data frame for a message: its first
		// byte is its channel.
		d.inMessage, d.channel, d.held = true, -1, d.held[:0]
	case opcode == 0:
		if !d.inMessage {
			return errors.New("websocket: continuation frame outside a message")
		}
	default:
		if d.inMessage {
			return errors.New("websocket: new message inside a message")
		}
		d.inMessage, d.channel, d.held = true, -1, d.held[:0]
	}
	if d.remaining > 1<<40 || (d.client && d.remaining > maxClientFrame) {
		return errors.New("websocket: frame too long")
	}
	if d.remaining == 0 {
		return d.endFrame(emit)
	}
	return nil
}

// payload handles payload bytes of the current frame. Without emit, it
// only checks: terminal data passes untouched.
func (d *wsDirection) payload(p []byte, emit func(event)) error {
	if d.control || len(p) == 0 {
		return nil
	}
	first := d.channel < 0
	if first {
		c := p[0]
		if d.masked {
			c ^= d.mask[d.maskAt]
		}
		d.channel = int(c)
		if d.base64 {
			d.channel = int(c) - '0'
		}
	}
	held := d.base64 || d.channel == channelResize || d.channel == channelError
	if emit == nil && !held {
		d.maskAt = (d.maskAt + len(p)) % 4
		return nil
	}
	data := p
	if d.masked {
		if cap(d.scratch) < len(p) {
			d.scratch = make([]byte, len(p))
		}
		data = d.scratch[:len(p)]
		d.maskAt = unmask(data, p, d.mask, d.maskAt)
	}
	if first {
		data = data[1:]
	}
	if held {
		if len(d.held)+len(data) > maxMessage {
			return errors.New("websocket: message too long to record")
		}
		d.held = append(d.held, data...)
		return nil
	}
	if e, ok := channelEvent(d.client, d.channel, data); ok {
		emit(e)
	}
	return nil
}

// endFrame ends the current frame, and with its last frame a message;
// each of the client's data frames is a message.
func (d *wsDirection) endFrame(emit func(event)) error {
	if d.control {
		d.closed = d.closing
		return nil
	}
	if !d.fin && !d.client {
		return nil
	}
	d.inMessage = false
	held := d.held
	d.held = d.held[:0]
	if len(held) == 0 && !d.base64 {
		return nil
	}
	if d.base64 {
		decoded, err := base64.StdEncoding.DecodeString(string(held))
		if err != nil {
			return errors.New("websocket: a base64 message does not decode")
		}
		held = decoded
	}
	if e, ok := channelEvent(d.client, d.channel, held); ok && emit != nil {
		emit(e)
	}
	return nil
}

// unmask XORs src with the mask, starting at mask byte at, into dst, eight
// bytes at a time; it returns where in the mask the next byte is.
func unmask(dst, src []byte, mask [4]byte, at int) int {
	var key [8]byte
	for j := range key {
		key[j] = mask[(at+j)%4]
	}
	k := binary.LittleEndian.Uint64(key[:])
	i := 0
	for ; i+8 <= len(src); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:])^k)
	}
	for ; i < len(src); i++ {
		dst[i] = src[i] ^ mask[(at+i)%4]
	}
	return (at + len(src)) % 4
}
