// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/moby/spdystream/spdy"
)

// maxSPDYFrame bounds one SPDY frame (its length field has 24 bits).
const maxSPDYFrame = 8 + 1<<24

// spdyDecoder decodes SPDY/3.1 as Kubernetes' remote command protocols
// use it: the client opens one stream per channel with a SYN_STREAM whose
// streamType header names it, then data frames carry each channel.
// Frames are framed here and parsed by spdystream's framer, one per
// direction, which keeps the compression state of their headers.
//
// What the recording could not classify fails the decoding: a SYN_STREAM
// whose streamType is not one of the channels, or that opens a stream id
// again (spdystream replaces the stream it had), and a data frame from the
// client for a stream no SYN_STREAM opened (spdystream drops it; the
// recording cannot tell what it was meant for). kubectl's exec and attach
// send none of these.
type spdyDecoder struct {
	fromClient, toClient *spdyDirection
	// channels maps stream ids to channels, from the client's SYN_STREAMs.
	channels map[spdy.StreamId]int
	// resize holds a resize message until its end (kubectl writes one
	// JSON object a line).
	resize []byte
}

func newSPDYDecoder() (*spdyDecoder, error) {
	d := &spdyDecoder{channels: map[spdy.StreamId]int{}}
	var err error
	if d.fromClient, err = newSPDYDirection(); err != nil {
		return nil, err
	}
	if d.toClient, err = newSPDYDirection(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *spdyDecoder) feed(fromClient bool, b []byte, emit func(event)) error {
	dir := d.toClient
	if fromClient {
		dir = d.fromClient
	}
	return dir.feed(b, func(f spdy.Frame) error { return d.frame(fromClient, f, emit) })
}

func (d *spdyDecoder) frame(fromClient bool, f spdy.Frame, emit func(event)) error {
	switch f := f.(type) {
	case *spdy.SynStreamFrame:
		channel, ok := streamTypes[f.Headers.Get("streamType")]
		if !ok {
			return fmt.Errorf("spdy: stream %d has an unknown streamType", f.StreamId)
		}
		if _, ok := d.channels[f.StreamId]; ok {
			return fmt.Errorf("spdy: stream %d opened twice", f.StreamId)
		}
		d.channels[f.StreamId] = channel
	case *spdy.DataFrame:
		channel, ok := d.channels[f.StreamId]
		if !ok && fromClient {
			return fmt.Errorf("spdy: data for stream %d, which no SYN_STREAM opened", f.StreamId)
		}
		if !ok {
			// The client drops it.
			return nil
		}
		if channel != channelResize {
			if e, ok := channelEvent(fromClient, channel, f.Data); ok && emit != nil {
				emit(e)
			}
			return nil
		}
		if !fromClient {
			// The client drops it.
			return nil
		}
		if len(d.resize)+len(f.Data) > maxMessage {
			return errors.New("spdy: resize message too long")
		}
		d.resize = append(d.resize, f.Data...)
		for {
			end := bytes.IndexByte(d.resize, '\n')
			if end < 0 {
				break
			}
			if e, ok := channelEvent(true, channelResize, d.resize[:end]); ok && emit != nil {
				emit(e)
			}
			d.resize = d.resize[end+1:]
		}
	}
	return nil
}

// spdyDirection frames the bytes of one direction and hands each whole
// frame to its framer.
type spdyDirection struct {
	pending []byte
	source  bytes.Reader
	framer  *spdy.Framer
}

func newSPDYDirection() (*spdyDirection, error) {
	d := &spdyDirection{}
	framer, err := spdy.NewFramer(nil, &d.source)
	if err != nil {
		return nil, err
	}
	d.framer = framer
	return d, nil
}

func (d *spdyDirection) feed(b []byte, frame func(spdy.Frame) error) error {
	d.pending = append(d.pending, b...)
	for len(d.pending) >= 8 {
		// Control and data frames alike: 24 bits of length after 5 bytes.
		size := 8 + (int(d.pending[5])<<16 | int(d.pending[6])<<8 | int(d.pending[7]))
		if size > maxSPDYFrame {
			return errors.New("spdy: frame too long")
		}
		if len(d.pending) < size {
			break
		}
		d.source.Reset(d.pending[:size])
		f, err := d.framer.ReadFrame()
		if err != nil {
			return fmt.Errorf("spdy: %w", err)
		}
		if d.source.Len() != 0 {
			return errors.New("spdy: a frame is shorter than its length")
		}
		// The framer keeps data frames' payloads as slices of its own.
		d.pending = d.pending[size:]
		if err := frame(f); err != nil {
			return err
		}
	}
	if len(d.pending) == 0 {
		d.pending = nil
	}
	return nil
}
