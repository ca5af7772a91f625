// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"os"
	"syscall"
)

// directBlock is the alignment direct I/O asks of a write's memory,
// length and offset.
const directBlock = 4096

// writeFile writes data to the new file f. Recordings are written once
// and seldom read: what is aligned goes with direct I/O, past the page
// cache, which costs a fraction of the CPU per byte of a copy into it;
// the rest, and everything where the file system or the memory does not
// allow it, through the page cache.
func writeFile(f *os.File, data []byte) error {
	if aligned := len(data) &^ (directBlock - 1); aligned > 0 && setDirect(f, true) == nil {
		n, err := f.Write(data[:aligned])
		data = data[n:]
		if setErr := setDirect(f, false); err == nil {
			err = setErr
		}
		if err != nil && n == 0 {
			// Not aligned in memory, or no direct I/O here.
			return writePieces(f, data)
		}
		if err != nil {
			return err
		}
	}
	return writePieces(f, data)
}

// setDirect turns direct I/O on or off for f.
func setDirect(f *os.File, on bool) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	err = conn.Control(func(fd uintptr) {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		if errno != 0 {
			opErr = errno
			return
		}
		if on {
			flags |= syscall.O_DIRECT
		} else {
			flags &^= syscall.O_DIRECT
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETFL, flags); errno != 0 {
			opErr = errno
		}
	})
	if err != nil {
		return err
	}
	return opErr
}
