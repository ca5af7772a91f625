// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Event kinds of asciicast v2: output, input, resize and marker.
const (
	kindOutput = "o"
	kindInput  = "i"
	kindResize = "r"
	kindMarker = "m"
)

// event is one thing a stream carried that the recording keeps. Its data
// may be the decoder's own memory: it is valid until the emit it was
// handed to returns.
type event struct {
	kind string
	data []byte
}

// Channels of Kubernetes' remote command streams, by number in the
// WebSocket protocols and by streamType in SPDY.
const (
	channelStdin  = 0
	channelStdout = 1
	channelStderr = 2
	channelError  = 3
	channelResize = 4
	// channelClose is v5.channel.k8s.io's signal that a channel closes.
	channelClose = 255
)

var streamTypes = map[string]int{
	"stdin": channelStdin, "stdout": channelStdout, "stderr": channelStderr, "error": channelError, "resize": channelResize,
}

// maxResponseHeader bounds the target's upgrade response; maxMessage the
// part of one message the decoder holds (resize and error messages, and
// base64 ones, which are decoded whole).
const (
	maxResponseHeader = 64 << 10
	maxMessage        = 1 << 20
)

// errNotUpgraded says that the target answered without switching
// protocols: there is no stream to record.
var errNotUpgraded = errors.New("the target did not switch protocols")

// decoder turns the bytes of an upgraded remote command connection, as
// they pass in either direction, into events. It first reads the target's
// answer to the upgrade, which names the protocol, then the frames of that
// protocol. It never panics on bad input: it stops with an error.
type decoder struct {
	response    []byte
	protocol    frameDecoder
	early       []byte
	err         error
	subprotocol string
}

// frameDecoder decodes the frames of one protocol in both directions;
// emit may be nil.
type frameDecoder interface {
	feed(fromClient bool, b []byte, emit func(event)) error
}

// Protocol names the stream protocol the target chose, once known.
func (d *decoder) Protocol() string { return d.subprotocol }

// spdyErrorStream is the id of the SPDY stream the client opened as its
// error channel; 0 if it opened none or the stream is not SPDY.
func (d *decoder) spdyErrorStream() uint32 {
	if spdy, ok := d.protocol.(*spdyDecoder); ok {
		for id, channel := range spdy.channels {
			if channel == channelError {
				return uint32(id)
			}
		}
	}
	return 0
}

// feed decodes b, which went from the client to the target when
// fromClient, and emits what it carried; with a nil emit it only checks
// that b decodes. After an error, it ignores all further bytes and
// returns that error again.
func (d *decoder) feed(fromClient bool, b []byte, emit func(event)) error {
	if d.err != nil {
		return d.err
	}
	if d.protocol == nil {
		if fromClient {
			// The client waits for the answer; anything before it is kept
			// for when the protocol is known.
			if len(d.early)+len(b) > maxResponseHeader {
				return d.fail(errors.New("the client sent too much before the upgrade was answered"))
			}
			d.early = append(d.early, b...)
			return nil
		}
		rest, err := d.readResponse(b)
		if err != nil || d.protocol == nil {
			return d.fail(err)
		}
		if len(d.early) > 0 {
			early := d.early
			d.early = nil
			if err := d.protocol.feed(true, early, emit); err != nil {
				return d.fail(err)
			}
		}
		b = rest
	}
	if len(b) == 0 {
		return nil
	}
	return d.fail(d.protocol.feed(fromClient, b, emit))
}

func (d *decoder) fail(err error) error {
	d.err = err
	return err
}

// readResponse collects the target's upgrade response and picks the frame
// decoder it names; it returns the bytes after the response.
func (d *decoder) readResponse(b []byte) ([]byte, error) {
	d.response = append(d.response, b...)
	end := bytes.Index(d.response, []byte("\r\n\r\n"))
	if end < 0 {
		if len(d.response) > maxResponseHeader {
			return nil, errors.New("the target's upgrade response is too long")
		}
		return nil, nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(d.response[:end+4])), nil)
	if err != nil {
		return nil, fmt.Errorf("the target's upgrade response: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, errNotUpgraded
	}
	rest := d.response[end+4:]
	d.response = nil
	switch upgrade := strings.ToLower(resp.Header.Get("Upgrade")); {
	case upgrade == "websocket":
		d.subprotocol = resp.Header.Get("Sec-Websocket-Protocol")
		d.protocol = newWebSocketDecoder(d.subprotocol)
	case strings.HasPrefix(upgrade, "spdy/"):
		d.subprotocol = resp.Header.Get("X-Stream-Protocol-Version")
		spdy, err := newSPDYDecoder()
		if err != nil {
			return nil, err
		}
		d.protocol = spdy
	default:
		return nil, fmt.Errorf("unknown upgrade protocol %q", upgrade)
	}
	return rest, nil
}

// channelEvent turns what a channel carried, from the client when
// fromClient, into an event; ok is false for what the recording does not
// keep, a channel that does not flow that way included: the target reads
// only standard input and resizes from the client, the client only the
// other channels from the target, and each drops the rest. Standard error
// goes out as output, as a terminal shows it; the error channel's Status
// becomes a marker.
func channelEvent(fromClient bool, channel int, data []byte) (event, bool) {
	if len(data) == 0 || fromClient != (channel == channelStdin || channel == channelResize) {
		return event{}, false
	}
	switch channel {
	case channelStdin:
		return event{kindInput, data}, true
	case channelStdout, channelStderr:
		return event{kindOutput, data}, true
	case channelError:
		var status struct {
			Status, Message string
		}
		if json.Unmarshal(data, &status) == nil && status.Status != "" {
			if status.Message == "" {
				return event{kindMarker, []byte("exit: " + status.Status)}, true
			}
			return event{kindMarker, []byte("exit: " + status.Message)}, true
		}
		return event{kindMarker, append([]byte("error: "), data...)}, true
	case channelResize:
		var size struct{ Width, Height uint16 }
		if json.Unmarshal(data, &size) != nil {
			return event{}, false
		}
		return event{kindResize, fmt.Appendf(nil, "%dx%d", size.Width, size.Height)}, true
	}
	return event{}, false
}
