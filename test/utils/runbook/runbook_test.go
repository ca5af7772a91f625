// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package runbook

import "testing"

const doc = "# Ops\n\n### Other\n\n1. Run\n\n   ```sh\n   other\n   ```\n\n" +
	"### Restore\n\nText.\n\n1. Stop.\n2. Restore:\n\n   ```sh\n   for n in 0 1; do\n     echo $n\n   done\n   ```\n\n" +
	"   `file.yaml`:\n\n   ```yaml\n   kind: Pod\n   ```\n\n#### Detail\n\n3. Last\n\n```sh\nlast\n```\n\n### Next\n\n4. After\n\n```sh\nafter\n```\n"

func TestBlock(t *testing.T) {
	for _, tc := range []struct {
		section, marker, want string
	}{
		{"### Restore", "2. Restore", "for n in 0 1; do\n  echo $n\ndone\n"},
		{"### Restore", "`file.yaml`:", "kind: Pod\n"},
		// A level-4 heading stays in the section.
		{"### Restore", "3. Last", "last\n"},
		{"### Other", "1. Run", "other\n"},
		// Missing: the marker in another section, in none, a section that
		// is not there.
		{"### Restore", "4. After", ""},
		{"### Other", "2. Restore", ""},
		{"### Gone", "1. Run", ""},
	} {
		got, err := Block([]byte(doc), tc.section, tc.marker)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s, %s: %q, want an error", tc.section, tc.marker, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s, %s: %q, %v; want %q", tc.section, tc.marker, got, err, tc.want)
		}
	}
}
