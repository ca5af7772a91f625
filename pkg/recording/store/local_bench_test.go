// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkLocalPut writes chunks of a fast stream's size, as a recording
// does, to the local store under TMPDIR: MB/s is what the disk takes.
func BenchmarkLocalPut(b *testing.B) {
	local, err := NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 3<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	b.SetBytes(int64(len(chunk)))
	for i := range b.N {
		if err := local.Put(context.Background(), fmt.Sprintf("s/capture-%06d", i), chunk); err != nil {
			b.Fatal(err)
		}
	}
}
