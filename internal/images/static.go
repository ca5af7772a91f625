// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"debug/elf"
	"fmt"
)

// CheckStatic fails unless the file is an ELF executable without a
// program interpreter: the images have no dynamic loader and no libc, so a
// binary linked against them (a cgo build) could not start there, though
// it starts fine on the build machine.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it names a program interpreter); build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}
