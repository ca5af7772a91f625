// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/sets"
)

// termFilter passes on what a recorded terminal drew and drops the control
// sequences that act on the terminal showing it rather than draw on it: a
// replay must show what the owner saw, but the owner chose those bytes, and
// the auditor's terminal must not copy to their clipboard, set their title,
// answer reports into their shell or run a string the recorded program
// wrote. It parses the byte stream as a VT500 terminal does (across writes:
// a sequence may span events), in UTF-8, and passes only whole sequences of
// an allowlist (text, C0 controls but ENQ, SGR, cursor movement, erasing,
// scrolling, tab stops, charsets, modes that only change drawing); every OSC,
// DCS, SOS, PM and APC string, every report or request, and whatever is
// malformed or overlong is dropped and counted. C1 controls, as 8-bit bytes
// or as UTF-8, count as their 7-bit ESC forms, which is what passes.
type termFilter struct {
	out   io.Writer
	state termState
	// seq is the escape or CSI sequence being read, from its ESC; over
	// says it grew past maxSequence and is dropped at its end.
	seq  []byte
	over bool
	// osc says the string being dropped is an OSC, which BEL ends too.
	osc bool
	// partial is the start of a UTF-8 character the last write cut.
	partial []byte
	// dropped counts the sequences not passed on.
	dropped int
	buf     []byte
}

// termState is where the parser is in the stream.
type termState int

const (
	stateGround termState = iota
	// stateEscape read ESC, and maybe intermediates.
	stateEscape
	// stateCSI read ESC [ (or C1 CSI), and maybe parameters and intermediates.
	stateCSI
	// stateString drops an OSC, DCS, SOS, PM or APC string to its end.
	stateString
	// stateStringEscape read an ESC in a string: ST (ESC \) if \ follows.
	stateStringEscape
)

// replacement is U+FFFD, shown for bytes of no character.
var replacement = []byte(string(utf8.RuneError))

// maxSequence bounds an escape or CSI sequence, ESC included: longer ones
// are read to their end and dropped, so that garbage cannot grow memory.
const maxSequence = 256

const (
	esc = 0x1b
	enq = 0x05
	bel = 0x07
	can = 0x18
	sub = 0x1a
	del = 0x7f
)

// newTermFilter filters what is written to it into out.
func newTermFilter(out io.Writer) *termFilter {
	return &termFilter{out: out}
}

// Write filters p and writes what passes to the filter's writer; a sequence
// p ends in the middle of waits for the next write.
func (f *termFilter) Write(p []byte) (int, error) {
	data := p
	if len(f.partial) > 0 {
		data = append(f.partial, p...)
		f.partial = nil
	}
	f.buf = f.buf[:0]
	for i := 0; i < len(data); {
		b := data[i]
		if b < utf8.RuneSelf {
			f.rune(rune(b), data[i:i+1])
			i++
			continue
		}
		if !utf8.FullRune(data[i:]) {
			f.partial = append([]byte(nil), data[i:]...)
			break
		}
		r, size := utf8.DecodeRune(data[i:])
		raw := data[i : i+size]
		switch {
		case r == utf8.RuneError && size == 1 && b <= 0x9f:
			// A byte 0x80 to 0x9f that starts no character is an 8-bit C1
			// control to a terminal that is not in UTF-8.
			r = rune(b)
		case r == utf8.RuneError && size == 1:
			// Any other byte of no character is shown as one, so that what
			// passes is UTF-8 and no byte combines with what follows.
			raw = replacement
		}
		f.rune(r, raw)
		i += size
	}
	if len(f.buf) == 0 {
		return len(p), nil
	}
	if _, err := f.out.Write(f.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the stream: a sequence left unfinished is dropped (the
// auditor's shell would finish it); a UTF-8 character cut short is shown
// as U+FFFD.
func (f *termFilter) Close() error {
	var err error
	switch {
	case f.state == stateEscape || f.state == stateCSI:
		f.drop()
	case f.state == stateGround && len(f.partial) > 0:
		_, err = f.out.Write(replacement)
	}
	f.state, f.partial = stateGround, nil
	return err
}

// Dropped is how many sequences the filter did not pass on.
func (f *termFilter) Dropped() int {
	return f.dropped
}

// rune reads one character: r, encoded as raw in the stream (raw is
// invalid UTF-8 for r utf8.RuneError).
func (f *termFilter) rune(r rune, raw []byte) {
	switch {
	case r >= 0x80 && r <= 0x9f:
		// A C1 control is its 7-bit form: ESC and r-0x40.
		f.rune(esc, []byte{esc})
		f.rune(r-0x40, []byte{byte(r - 0x40)})
		return
	}
	switch f.state {
	case stateGround:
		switch r {
		case esc:
			f.start()
		case enq:
			// ENQ makes the terminal send its answerback.
			f.dropped++
		default:
			f.buf = append(f.buf, raw...)
		}
	case stateEscape, stateCSI:
		f.inSequence(r, raw)
	case stateString:
		switch {
		case r == esc:
			f.state = stateStringEscape
		case r == bel && f.osc, r == can, r == sub:
			f.state = stateGround
		}
	case stateStringEscape:
		f.state = stateGround
		if r != '\\' {
			// ESC ends the string and starts what follows it.
			f.start()
			f.rune(r, raw)
		}
	}
}

// start begins an escape sequence at ESC.
func (f *termFilter) start() {
	f.state, f.seq, f.over = stateEscape, append(f.seq[:0], esc), false
}

// drop ends the sequence being read without passing it on.
func (f *termFilter) drop() {
	f.dropped++
	f.state = stateGround
}

// inSequence reads r within an escape or CSI sequence.
func (f *termFilter) inSequence(r rune, raw []byte) {
	switch {
	case r == esc:
		// A new sequence cuts the one being read.
		f.drop()
		f.start()
		return
	case r == can || r == sub:
		// Both cancel the sequence.
		f.drop()
		return
	case r == del:
		// A terminal ignores DEL within a sequence.
		return
	case r == enq:
		f.dropped++
		return
	case r < 0x20:
		// Other C0 controls act within a sequence as outside it.
		f.buf = append(f.buf, raw...)
		return
	case r >= 0x80:
		// Not part of any sequence: the sequence is malformed, and r is
		// text.
		f.drop()
		f.rune(r, raw)
		return
	}
	if len(f.seq) >= maxSequence {
		f.over = true
	} else {
		f.seq = append(f.seq, byte(r))
	}
	if f.state == stateEscape {
		f.inEscape(byte(r))
	} else if r >= 0x40 {
		f.finish(csiAllowed(f.seq))
	}
}

// inEscape reads b after ESC and its intermediates so far.
func (f *termFilter) inEscape(b byte) {
	if b < 0x30 {
		return // an intermediate
	}
	if len(f.seq) == 2 {
		switch b {
		case '[':
			f.state = stateCSI
			return
		case ']', 'P', 'X', '^', '_':
			// OSC, DCS, SOS, PM, APC: strings the terminal acts on.
			f.dropped++
			f.state, f.osc = stateString, b == ']'
			return
		}
	}
	f.finish(escapeAllowed(f.seq))
}

// finish ends the sequence in f.seq: passed on if allowed and whole.
func (f *termFilter) finish(allowed bool) {
	if !allowed || f.over {
		f.drop()
		return
	}
	f.buf = append(f.buf, f.seq...)
	f.state = stateGround
}

// escapeAllowed tells whether the escape sequence seq (ESC, intermediates,
// final) only draws: cursor save and restore, index and reverse index, tab
// set, keypad modes, reset, charset designations and shifts, line sizes.
// Not: DECID (ESC Z), which answers, and the conformance and encoding
// switches (ESC SP, ESC %), which change how the terminal reads and talks.
func escapeAllowed(seq []byte) bool {
	intermediates, final := seq[1:len(seq)-1], seq[len(seq)-1]
	switch {
	case len(intermediates) == 0:
		return strings.IndexByte("6789=>DEHMNOcno|}~", final) >= 0
	case strings.IndexByte("()*+-./", intermediates[0]) >= 0:
		return true
	case len(intermediates) == 1 && intermediates[0] == '#':
		return strings.IndexByte("34568", final) >= 0
	}
	return false
}

// csiDrawing are the CSI sequences that only draw, by private marker,
// intermediates and final: cursor movement and position, erasing and
// selective erasing, inserting and deleting, scrolling and its region,
// tabs, repeat, SGR and its stack, cursor style, soft reset, rectangle
// operations, modes (checked further by csiAllowed). Not: device status,
// attributes, mode, parameter, checksum and locator reports (n, c, $p, x,
// *y, 'w...), window operations and reports (t), title and key modes
// (>...), printing (i), status lines ($}, $~), LEDs (q).
var csiDrawing = sets.New(
	"@", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "P", "S", "T", "X", "Z", "^", "`",
	"a", "b", "d", "e", "f", "g", "h", "j", "k", "l", "m", "r", "s", "u", "W",
	"?J", "?K", "?h", "?l", "?r", "?s", "?W",
	" @", " A", " q", `"q`, "!p", "#p", "#q", "#{", "#}", "$r", "$t", "$v", "$x", "$z", "${", "*x", "'}", "'~",
)

// reportingModes are the DEC private modes (CSI ? Pm h) that make the
// terminal send something: mouse and focus reports and their encodings,
// colour-scheme and in-band resize notifications. ansiInputModes are the
// ANSI modes (CSI Pm h) that act on input: keyboard lock and local echo.
var (
	reportingModes = sets.New(9, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1015, 1016, 2031, 2048)
	ansiInputModes = sets.New(2, 12)
)

// csiAllowed tells whether the CSI sequence seq (ESC [, parameters,
// intermediates, final) only draws.
func csiAllowed(seq []byte) bool {
	body, final := seq[2:len(seq)-1], seq[len(seq)-1]
	var marker string
	if len(body) > 0 && strings.IndexByte("<=>?", body[0]) >= 0 {
		marker, body = string(body[:1]), body[1:]
	}
	params := body
	if i := bytes.IndexFunc(body, func(r rune) bool { return r < 0x30 }); i >= 0 {
		params = body[:i]
	}
	intermediates := body[len(params):]
	if bytes.ContainsFunc(params, func(r rune) bool { return r > ';' }) ||
		bytes.ContainsFunc(intermediates, func(r rune) bool { return r >= 0x30 }) {
		return false // a marker not first, or a parameter after an intermediate
	}
	if !csiDrawing.Has(marker + string(intermediates) + string(final)) {
		return false
	}
	if final != 'h' && final != 'l' {
		return true
	}
	banned := ansiInputModes
	if marker == "?" {
		banned = reportingModes
	}
	for _, p := range strings.Split(string(params), ";") {
		p, _, _ = strings.Cut(p, ":")
		// A mode a terminal might read otherwise, out of range, is refused.
		if n, err := strconv.Atoi(p); p != "" && (err != nil || n > 65535 || banned.Has(n)) {
			return false
		}
	}
	return true
}
