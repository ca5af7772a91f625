// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package store

import "os"

// writePiece is the most one write to a file through the page cache
// takes: the kernel copies large writes into it at a higher cost per byte.
const writePiece = 256 << 10

// writePieces writes data to f in pieces of writePiece.
func writePieces(f *os.File, data []byte) error {
	for len(data) > 0 {
		n, err := f.Write(data[:min(len(data), writePiece)])
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
