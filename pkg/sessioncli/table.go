// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
)

// printRows prints a table the plugin makes itself (of recorded streams, of
// requests) with kubectl's table printer, so that an owner-chosen cell is
// shown as kubectl shows one: cut at a line break with "...", ESC as ^[, and
// what kubectl leaves escaped by escapeControls. what names the rows for
// the notice that there are none.
func printRows(out, errOut io.Writer, what string, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(errOut, "No %s found.\n", what)
		return err
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(newTable(columns, rows), out)
}

// newTable is a table of rows, their text cells escaped.
func newTable(columns []string, rows [][]any) *metav1.Table {
	table := &metav1.Table{}
	for _, c := range columns {
		table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: c, Type: "string"})
	}
	for _, cells := range rows {
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells})
	}
	escapeCells(table)
	return table
}

// escapeCells escapes, in every text cell of table, the controls kubectl's
// table printer passes on (see escapeControls).
func escapeCells(table *metav1.Table) {
	for _, row := range table.Rows {
		for i, cell := range row.Cells {
			if s, ok := cell.(string); ok {
				row.Cells[i] = escapeControls(s)
			}
		}
	}
}

// kubectlEscapes are the controls kubectl's table printer handles in a
// cell: line breaks cut it, ESC and CR are escaped.
const kubectlEscapes = "\n\r\f\x1b"

// escapeControls writes the other controls kubectl's table printer would
// pass to the terminal in caret notation, as it writes ESC: C0 controls
// (^H for a backspace, which would overwrite the columns before it, ^I for
// a tab, which would make a column of its own), DEL (^?), and C1 controls,
// which a terminal reads as ESC and a character, as those (^[[ for CSI).
func escapeControls(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f || r == utf8.RuneError }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 && s[i] <= 0x9f {
			r = rune(s[i]) // an 8-bit C1 control
		}
		switch {
		case r < 0x20 && strings.IndexByte(kubectlEscapes, byte(r)) < 0, r == 0x7f:
			b.WriteByte('^')
			b.WriteByte(byte(r) ^ 0x40)
		case r >= 0x80 && r <= 0x9f:
			b.WriteString("^[")
			b.WriteByte(byte(r - 0x40))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeLine escapes text printed as one line of its own: every control,
// line breaks included, is shown rather than acted on.
func escapeLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\f", `\f`).Replace(printers.EscapeTerminal(escapeControls(s)))
}
