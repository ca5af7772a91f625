// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"time"
)

// What the data plane may add to a small GET of the direct connection.
const (
	smallGetP50Target = 150 * time.Microsecond
	smallGetP99Target = 0.10
)

// smallGetRows are the small GET's p50 and p99 per path, what each way adds
// to the direct one, and the data plane's against its targets.
func smallGetRows(p50, p99 []time.Duration) []row {
	r50, r99 := addedRow("small GET p50", p50), addedRow("small GET p99", p99)
	r50.ratio += fmt.Sprintf(" (target: data plane ≤ +%v)", smallGetP50Target)
	r99.ratio += fmt.Sprintf(" (data plane +%.0f%%; target ≤ +%.0f%%)",
		100*float64(p99[dataPlane]-p99[targetDirect])/float64(p99[targetDirect]), 100*smallGetP99Target)
	return []row{r50, r99}
}
