// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package runbook

import (
	"strings"
	"testing"
)

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

func TestBlocks(t *testing.T) {
	const guide = "# Guide\n\n```sh\none   # first\n```\n\n```yaml\nkind: Pod\n```\n\n" +
		"<!-- not run: needs a real cluster -->\n```sh\nkubectl apply -k artifacts/\n```\n\n" +
		"- a list item\n\n  ```sh\n  indented\n  ```\n\n```\nplain\n```\n\n```sh\ntwo\nthree\n```\n"
	want := []CodeBlock{
		{Text: "one   # first\n"},
		{Text: "kubectl apply -k artifacts/\n", NotRun: "needs a real cluster"},
		{Text: "two\nthree\n"},
	}
	got := Blocks([]byte(guide), "sh")
	if len(got) != len(want) {
		t.Fatalf("%d blocks %q, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		block   string
		want    []Line
		refused []bool
		says    [][]string
	}{
		{block: "# only a comment\nkubectl get ns   # `kube-system`\n",
			want: []Line{{"kubectl get ns", "`kube-system`"}}, refused: []bool{false}, says: [][]string{{"kube-system"}}},
		// A # inside quotes or a word is no comment.
		{block: `echo "a # b" 'c # d' e#f   # 403: carol` + "\n",
			want: []Line{{`echo "a # b" 'c # d' e#f`, "403: carol"}}, refused: []bool{true}, says: [][]string{nil}},
		{block: "kubectl session open x   # refused: `locked by` `inc-1`\n",
			want: []Line{{"kubectl session open x", "refused: `locked by` `inc-1`"}}, refused: []bool{true}, says: [][]string{{"locked by", "inc-1"}}},
		{block: "kubectl get pods  # Forbidden\nkubectl x  # an Error\nkubectl y\n",
			want:    []Line{{"kubectl get pods", "Forbidden"}, {"kubectl x", "an Error"}, {"kubectl y", ""}},
			refused: []bool{true, true, false}, says: [][]string{nil, nil, nil}},
		// A backslash continues the command on the next line.
		{block: "run \\\n  --flag=1 \\\n  --other   # both flags\n",
			want: []Line{{"run   --flag=1   --other", "both flags"}}, refused: []bool{false}, says: [][]string{nil}},
	} {
		got := Lines(tc.block)
		if len(got) != len(tc.want) {
			t.Errorf("%q: %q, want %q", tc.block, got, tc.want)
			continue
		}
		for i, l := range got {
			if l != tc.want[i] {
				t.Errorf("%q: line %d is %+v, want %+v", tc.block, i, l, tc.want[i])
			}
			if l.Refused() != tc.refused[i] {
				t.Errorf("%q: line %d refused %v, want %v", tc.block, i, l.Refused(), tc.refused[i])
			}
			if says := l.Says(); strings.Join(says, "|") != strings.Join(tc.says[i], "|") {
				t.Errorf("%q: line %d says %q, want %q", tc.block, i, says, tc.says[i])
			}
		}
	}
}
