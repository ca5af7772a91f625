// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module's root, from the test's directory.
const root = "../.."

// architecture is the map of the code these tests hold to the tree.
const architecture = "docs/architecture.md"

// tableColumn returns the first column of each row of the Markdown table
// that follows the heading line section, and the whole rows.
func tableColumn(t *testing.T, doc []byte, section string) (firsts, rows []string) {
	t.Helper()
	inSection := false
	for s := bufio.NewScanner(bytes.NewReader(doc)); s.Scan(); {
		line := s.Text()
		switch {
		case line == section:
			inSection = true
		case inSection && strings.HasPrefix(line, "#"):
			return firsts, rows
		case inSection && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, "|")
			firsts, rows = append(firsts, strings.TrimSpace(cells[1])), append(rows, line)
		}
	}
	if len(firsts) == 0 {
		t.Fatalf("%s: no table in %q", architecture, section)
	}
	return firsts, rows
}

// codeSpans are the texts in backquotes.
var codeSpans = regexp.MustCompile("`([^`]+)`")

// packageDirs are the module's directories with Go files, relative to its
// root, without testdata and other modules (hack/tools).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." {
				_, err := os.Stat(filepath.Join(path, "go.mod"))
				if strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" || err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if dir := filepath.ToSlash(filepath.Dir(rel)); strings.HasSuffix(rel, ".go") && !slices.Contains(dirs, dir) && dir != "." {
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestPackagesTable fails when a directory of the module with Go files is
// named by no row of docs/architecture.md's packages table (by its path, or
// under a row's `dir/...`), or when the table names a directory that is
// not there.
func TestPackagesTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, architecture))
	if err != nil {
		t.Fatal(err)
	}
	firsts, _ := tableColumn(t, doc, "## Packages")
	var named []string
	for _, first := range firsts[1:] {
		for _, m := range codeSpans.FindAllStringSubmatch(first, -1) {
			named = append(named, m[1])
		}
	}
	covers := func(entry, dir string) bool {
		if tree, ok := strings.CutSuffix(entry, "/..."); ok {
			return dir == tree || strings.HasPrefix(dir, tree+"/")
		}
		return dir == entry
	}
	for _, dir := range packageDirs(t) {
		if !slices.ContainsFunc(named, func(entry string) bool { return covers(entry, dir) }) {
			t.Errorf("%s: the packages table names no row for %s: add it, or a row of a directory above it with /...", architecture, dir)
		}
	}
	for _, entry := range named {
		if info, err := os.Stat(filepath.Join(root, strings.TrimSuffix(entry, "/..."))); err != nil || !info.IsDir() {
			t.Errorf("%s: the packages table names %s, which is not a directory", architecture, entry)
		}
	}
}

// TestLayersTable fails when a layer of verify-imports is missing from
// docs/architecture.md's Layers table, or its row names other packages.
func TestLayersTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, architecture))
	if err != nil {
		t.Fatal(err)
	}
	firsts, rows := tableColumn(t, doc, "## Layers")
	for _, l := range layers {
		i := slices.Index(firsts, l.name)
		if i < 0 {
			t.Errorf("%s: the Layers table has no row %q (a layer of hack/verify-imports)", architecture, l.name)
			continue
		}
		// The packages column names each prefix as `dir/...` or `dir`.
		var want, got []string
		for _, prefix := range l.packages {
			if tree, ok := strings.CutSuffix(prefix, "/"); ok {
				prefix = tree + "/..."
			}
			want = append(want, prefix)
		}
		for _, m := range codeSpans.FindAllStringSubmatch(strings.Split(rows[i], "|")[2], -1) {
			got = append(got, m[1])
		}
		if !slices.Equal(want, got) {
			t.Errorf("%s: the Layers table's row %q names %q; hack/verify-imports has %q", architecture, l.name, got, want)
		}
	}
	for _, name := range firsts[1:] {
		if !slices.ContainsFunc(layers, func(l layer) bool { return l.name == name }) {
			t.Errorf("%s: the Layers table's row %q is no layer of hack/verify-imports", architecture, name)
		}
	}
}

// mdLink is a Markdown inline link; its target has no spaces.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchors are the GitHub anchors of a Markdown doc's headings: lower case,
// punctuation but hyphens and underscores dropped, spaces as hyphens, a
// repeated one with -1, -2, ….
func anchors(doc []byte) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	inCode := false
	for s := bufio.NewScanner(bytes.NewReader(doc)); s.Scan(); {
		line := s.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if inCode || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			out[fmt.Sprintf("%s-%d", anchor, n)] = true
		} else {
			out[anchor] = true
		}
		seen[anchor]++
	}
	return out
}

// TestDocLinks fails when a relative link of README.md or a doc points to
// no file, or to no heading of the Markdown file it names.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "test", "bench", "README.md"))
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, doc)
		inCode := false
		for n, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
			}
			if inCode {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), file)
				}
				linked, err := os.ReadFile(path)
				if info, statErr := os.Stat(path); statErr != nil || (err != nil && !info.IsDir()) {
					t.Errorf("%s:%d: %s points to no file", name, n+1, target)
					continue
				}
				if anchor != "" && (!strings.HasSuffix(path, ".md") || !anchors(linked)[anchor]) {
					t.Errorf("%s:%d: %s points to no heading of %s", name, n+1, target, file)
				}
			}
		}
	}
}
