// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// The capture format: what a stream's chunk objects hold. A chunk is
// captureMagic, then records, each one read or write of the relay as it
// passed: a byte saying its direction (0 from the client to the target,
// 1 back), its time since the stream started in nanoseconds and its length,
// both uvarints (encoding/binary), then its bytes as relayed. A recording's
// chunks, concatenated without their magic, are the whole stream from
// the target's answer on; the asciicast is built from them when it is
// read. Of the target's answer to the upgrade only its status line and
// the headers that name the protocol (Upgrade, Sec-WebSocket-Protocol,
// X-Stream-Protocol-Version) are kept, and after an answer that is not
// 101 nothing more.
const captureMagic = "clustergate-capture/1\n"

const (
	recordFromClient byte = 0
	recordToClient   byte = 1
	// recordHeaderMax is the most a record's header takes.
	recordHeaderMax = 1 + 2*binary.MaxVarintLen64
)

// appendRecord appends a record of data relayed at at.
func appendRecord(chunk []byte, at time.Duration, fromClient bool, data []byte) []byte {
	direction := recordToClient
	if fromClient {
		direction = recordFromClient
	}
	chunk = append(chunk, direction)
	chunk = binary.AppendUvarint(chunk, uint64(max(at, 0)))
	chunk = binary.AppendUvarint(chunk, uint64(len(data)))
	return append(chunk, data...)
}

// errBadCapture says that a chunk is not in the capture format.
var errBadCapture = errors.New("not a capture chunk")

// readCapture calls record for each record of chunk, in order, until it
// returns an error; data is chunk's own memory.
func readCapture(chunk []byte, record func(at time.Duration, fromClient bool, data []byte) error) error {
	rest, ok := bytes.CutPrefix(chunk, []byte(captureMagic))
	if !ok {
		return errBadCapture
	}
	for len(rest) > 0 {
		direction := rest[0]
		if direction != recordFromClient && direction != recordToClient {
			return fmt.Errorf("%w: a record has direction %d", errBadCapture, direction)
		}
		at, n := binary.Uvarint(rest[1:])
		if n <= 0 || at > math.MaxInt64 {
			return fmt.Errorf("%w: a record's time does not decode", errBadCapture)
		}
		rest = rest[1+n:]
		size, n := binary.Uvarint(rest)
		if n <= 0 || size > uint64(len(rest)-n) {
			return fmt.Errorf("%w: a record is cut short", errBadCapture)
		}
		data := rest[n : n+int(size)]
		rest = rest[n+int(size):]
		if err := record(time.Duration(at), direction == recordFromClient, data); err != nil {
			return err
		}
	}
	return nil
}

// unreadableAnswer stands for an answer to the upgrade that is too long or
// does not parse: decoding it fails, as decoding the answer itself would.
const unreadableAnswer = "HTTP/1.1 ??? unreadable\r\n\r\n"

// keptAnswer is what a recording keeps of the target's answer to the
// upgrade, header the answer up to its blank line: the status line and
// the headers that name the protocol, never another (a cookie, say).
// upgraded says whether the target switched protocols.
func keptAnswer(header []byte) (kept []byte, upgraded bool) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(header)), nil)
	if err != nil {
		return []byte(unreadableAnswer), false
	}
	_ = resp.Body.Close()
	kept = fmt.Appendf(nil, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	for _, name := range []string{"Upgrade", "Sec-Websocket-Protocol", "X-Stream-Protocol-Version"} {
		if value := resp.Header.Get(name); value != "" {
			kept = fmt.Appendf(kept, "%s: %s\r\n", name, value)
		}
	}
	return append(kept, "\r\n"...), resp.StatusCode == http.StatusSwitchingProtocols
}

// chunkBuffers keeps the buffers chunks are captured in, by size class:
// 64 KiB (a few reads of the relay) and four times as much each up to a
// fast stream's chunk. A stream holds one as large as what it relays in a
// FlushInterval, and an idle one none. Each class keeps up to
// keptBufferBytes of them for the next chunks; a sync.Pool would lose
// them at every GC, which a fast stream's allocations trigger often, and
// a new buffer is zeroed on the stream's path.
var chunkBuffers = func() (classes [5]chan []byte) {
	for i := range classes {
		classes[i] = make(chan []byte, max(1, keptBufferBytes/chunkBufferClass(i)))
	}
	return classes
}()

// keptBufferBytes bounds what each size class keeps of idle buffers.
const keptBufferBytes = 16 << 20

func chunkBufferClass(i int) int { return 64 << 10 << (2 * i) }

// getChunkBuffer returns an empty buffer that holds at least n bytes.
func getChunkBuffer(n int) []byte {
	for i, kept := range chunkBuffers {
		if size := chunkBufferClass(i); size >= n {
			select {
			case b := <-kept:
				return b
			default:
				return make([]byte, 0, size)
			}
		}
	}
	return make([]byte, 0, n)
}

// putChunkBuffer gives b back for reuse, when it is of a size class and
// the class keeps fewer than its bound.
func putChunkBuffer(b []byte) {
	for i, kept := range chunkBuffers {
		if chunkBufferClass(i) == cap(b) {
			select {
			case kept <- b[:0]:
			default:
			}
			return
		}
	}
}
