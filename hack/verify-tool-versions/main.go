// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-tool-versions checks that every Go module the repository's
// modules build from (the project, the tool sets under hack/tools and the
// test modules under test/tools) is at one version across all of them. The
// Go build cache reuses a compiled package only when its whole dependency
// closure is identical, so a second version of k8s.io/api or grpc in one
// tool set recompiles everything above it: before the versions were
// aligned, a cold build compiled 10,191 packages where 7,027 now do (the
// note in hack/tools/build.sh has the minutes). make verify runs it; with
// -fix it raises each module to the newest version any of them uses and
// tidies, until all agree (Go's version selection only ever raises).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// buildTags are the tags hack/tools/build.sh builds a set with, so that the
// check looks at the packages that set compiles.
var buildTags = map[string]string{"hack/tools/prometheus": "remove_all_sd"}

// ownVersions are the modules, by path prefix, that a set keeps at its own
// versions because it does not build at the others' ("" for all): krew's
// pins predate Go modules (client-go v11.0.0+incompatible), and
// gardener-apiserver v1.145 builds only at the k8s.io minor it pins (0.35;
// at 0.37 k8s.io/api lacks types its generated OpenAPI names) and with the
// Prometheus libraries of that release.
var ownVersions = map[string][]string{
	"hack/tools/krew":     {""},
	"hack/tools/gardener": {"k8s.io/", "sigs.k8s.io/", "github.com/prometheus/", "github.com/VictoriaMetrics/"},
}

// ownVersion reports whether dir keeps its own version of module.
func ownVersion(dir, module string) bool {
	for _, prefix := range ownVersions[dir] {
		if strings.HasPrefix(module, prefix) {
			return true
		}
	}
	return false
}

func main() {
	fix := flag.Bool("fix", false, "raise every module to the newest version in use and tidy, until all agree")
	flag.Parse()
	dirs, err := moduleDirs(".")
	if err != nil {
		fail(err)
	}
	for round := 1; ; round++ {
		used := map[string]map[string]string{} // module dir -> module path -> version
		for _, dir := range dirs {
			if used[dir], err = modulesBuilt(dir); err != nil {
				fail(err)
			}
		}
		raises := raisesToNewest(used)
		if len(raises) == 0 {
			return
		}
		if !*fix {
			for _, r := range raises {
				fmt.Fprintf(os.Stderr, "%s: %s %s, while another module builds with %s\n", r.dir, r.module, r.from, r.to)
			}
			fail(fmt.Errorf("%d module versions are older than another module builds with: run go run ./hack/verify-tool-versions -fix", len(raises)))
		}
		if round > 5 {
			fail(fmt.Errorf("versions still differ after %d rounds of raising", round-1))
		}
		if err := apply(raises); err != nil {
			fail(err)
		}
	}
}

// moduleDirs lists the directories under root that hold a go.mod, root first.
func moduleDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_output" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// modulesBuilt returns the version of each module that provides a package
// to dir's builds: its own packages with their tests, and its tool
// directives. Modules dir keeps at its own versions are left out, and so
// is every module with a package that imports one of them, directly or
// not: such a package compiles apart from the other sets' anyway, and
// raising its module would raise the kept ones with it.
func modulesBuilt(dir string) (map[string]string, error) {
	const format = `{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}} {{join .Deps ","}}{{end}}`
	type pkg struct{ module, version, deps string }
	pkgs := map[string]pkg{}
	for _, args := range [][]string{
		{"-test", "./..."},
		{"-tags", buildTags[dir], "tool"},
	} {
		cmd := exec.Command("go", append([]string{"list", "-e", "-deps", "-f", format}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list in %s: %w: %s", dir, err, stderr.String())
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			// Own packages have no version; replaced ones without a
			// version point at a directory and cannot be raised.
			if f := strings.Fields(sc.Text()); len(f) >= 3 {
				p := pkg{module: f[1], version: f[2]}
				if len(f) == 4 {
					p.deps = f[3]
				}
				pkgs[f[0]] = p
			}
		}
	}
	kept := map[string]bool{}
	for _, p := range pkgs {
		if ownVersion(dir, p.module) {
			kept[p.module] = true
		}
	}
	if len(kept) > 0 {
		for _, p := range pkgs {
			for dep := range strings.SplitSeq(p.deps, ",") {
				if d, ok := pkgs[dep]; ok && ownVersion(dir, d.module) {
					kept[p.module] = true
					break
				}
			}
		}
	}
	versions := map[string]string{}
	for _, p := range pkgs {
		if !kept[p.module] {
			versions[p.module] = p.version
		}
	}
	return versions, nil
}

// raise is one module to move to a newer version in one module directory.
type raise struct{ dir, module, from, to string }

// raisesToNewest returns, for every module built by two or more
// directories at different versions, the raises that bring each to the
// newest.
func raisesToNewest(used map[string]map[string]string) []raise {
	newest := map[string]string{}
	count := map[string]int{}
	for _, versions := range used {
		for m, v := range versions {
			count[m]++
			if semver.Compare(v, newest[m]) > 0 {
				newest[m] = v
			}
		}
	}
	var raises []raise
	for dir, versions := range used {
		for m, v := range versions {
			if count[m] > 1 && v != newest[m] {
				raises = append(raises, raise{dir: dir, module: m, from: v, to: newest[m]})
			}
		}
	}
	sort.Slice(raises, func(i, j int) bool {
		if raises[i].dir != raises[j].dir {
			return raises[i].dir < raises[j].dir
		}
		return raises[i].module < raises[j].module
	})
	return raises
}

// apply requires the raised versions in each directory's go.mod and tidies
// it, which may raise further modules: the next round sees those.
func apply(raises []raise) error {
	edits := map[string][]string{}
	for _, r := range raises {
		edits[r.dir] = append(edits[r.dir], "-require="+r.module+"@"+r.to)
		fmt.Printf("%s: %s %s -> %s\n", r.dir, r.module, r.from, r.to)
	}
	for dir, args := range edits {
		for _, cmd := range [][]string{append([]string{"mod", "edit"}, args...), {"mod", "tidy"}} {
			c := exec.Command("go", cmd...)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("go %s in %s: %w: %s", cmd[0]+" "+cmd[1], dir, err, out)
			}
		}
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "verify-tool-versions:", err)
	os.Exit(1)
}
