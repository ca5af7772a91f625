// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package store

import "os"

// writeFile writes data to the new file f.
func writeFile(f *os.File, data []byte) error { return writePieces(f, data) }
