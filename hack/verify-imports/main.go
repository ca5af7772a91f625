// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command verify-imports checks the layering of the module's packages, as
// Gardener's .import-restrictions files with import-boss do: data flows one
// way, cmd → pkg/apiserver → the parts (registry, controllers, proxy, data
// plane, admission) → libraries → generated clients → API types. It lists
// every package's imports with go list and fails on an import its layer
// does not allow, and on a command that links a module it must not
// (unlinked). make verify runs it; docs/architecture.md explains the
// layers.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
)

const module = "github.com/clustergate/clustergate/"

// layer is a set of packages, by path prefix within the module, and the
// prefixes they may import from the module besides their own layer's.
type layer struct {
	name     string
	packages []string
	may      []string
}

// apis, generated and libraries are what the parts build on; recording is
// the one part that other parts build on besides the proxy.
var (
	apis      = []string{"pkg/apis/"}
	generated = []string{"pkg/generated/"}
	libraries = []string{"pkg/intern", "pkg/memlimit", "pkg/frontproxy", "pkg/embeddedetcd", "pkg/gardener", "pkg/credentials",
		"pkg/ownership", "pkg/approvalpolicy", "pkg/sessionaccess", "pkg/sessionevents", "pkg/wsframe", "pkg/admission/authz", "pkg/registry/finalizers", "pkg/registry/status", "pkg/registry/table",
		"pkg/registry/registrytest"}
	// recording is the recorder, the part the proxy and the session
	// storage build on.
	recording = []string{"pkg/recording"}
)

func join(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// layers, most specific first: a package belongs to the first layer with a
// prefix of its path.
var layers = []layer{
	{name: "API types", packages: apis},
	{name: "generated clients", packages: generated, may: apis},
	{name: "libraries", packages: libraries, may: join(apis, generated)},
	// Each part on its own: the recorder and the proxy are the parts others
	// build on (the proxy records what it relays, the session storage opens
	// proxied requests and reads recordings back, the data plane serves
	// proxied requests). The kubectl plugin reads recordings through the
	// API types, never the recorder.
	{name: "recording", packages: []string{"pkg/recording"}, may: join(apis, generated, libraries)},
	{name: "proxy", packages: []string{"pkg/proxy"}, may: join(apis, generated, libraries, recording)},
	{name: "data plane", packages: []string{"pkg/dataplane"}, may: join(apis, generated, libraries, recording, []string{"pkg/proxy"})},
	{name: "registry", packages: []string{"pkg/registry/"}, may: join(apis, generated, libraries, recording, []string{"pkg/proxy"})},
	{name: "admission", packages: []string{"pkg/admission/"}, may: join(apis, generated, libraries)},
	{name: "controllers", packages: []string{"pkg/controllers"}, may: join(apis, generated, libraries)},
	{name: "plugin", packages: []string{"pkg/sessioncli"}, may: join(apis, generated, libraries)},
	{name: "server", packages: []string{"pkg/apiserver"}, may: []string{"pkg/"}},
	// The commands hold flags: they fill the server's settings through
	// pkg/apiserver, and the kubectl plugin's runs pkg/sessioncli, without
	// reaching into the parts; but the server's recording flags take the
	// recorder's modes and defaults (recording.Mode).
	{name: "commands", packages: []string{"cmd/"}, may: join(apis, generated, libraries, recording, []string{"pkg/apiserver", "pkg/sessioncli"})},
	// What only runs the product or tests it: anything of pkg, and
	// internal, which pkg never imports.
	{name: "local control plane", packages: []string{"internal/"}, may: []string{"pkg/", "internal/"}},
	{name: "tools and tests", packages: []string{"hack/", "test/"}, may: []string{"cmd/", "pkg/", "internal/", "test/"}},
}

// unlinked are modules a command's binary must not link, with why: the
// kubectl plugin reads recordings as JSON, through the API types, and
// needs neither the recording store's S3 client nor the recorder's SPDY
// framer.
var unlinked = []struct {
	command, module, why string
}{
	{"./cmd/kubectl-session", "github.com/minio/minio-go", "the recording store's S3 client"},
	{"./cmd/kubectl-session", "github.com/moby/spdystream", "the recorder's SPDY framer"},
}

// linked returns the violations of unlinked: a command whose dependencies
// (go list -deps) include a module it must not link.
func linked() ([]string, error) {
	deps := map[string][]string{}
	var violations []string
	for _, u := range unlinked {
		if deps[u.command] == nil {
			out, err := exec.Command("go", "list", "-tags=fieldsv1string", "-deps", u.command).Output()
			if err != nil {
				return nil, fmt.Errorf("go list -deps %s: %w", u.command, err)
			}
			deps[u.command] = strings.Fields(string(out))
		}
		for _, dep := range deps[u.command] {
			if dep == u.module || strings.HasPrefix(dep, u.module+"/") {
				violations = append(violations, fmt.Sprintf("%s links %s (%s) through %s", u.command, u.module, u.why, dep))
				break
			}
		}
	}
	return violations, nil
}

func layerOf(pkg string) *layer {
	for i := range layers {
		for _, prefix := range layers[i].packages {
			if strings.HasPrefix(pkg, prefix) || pkg == strings.TrimSuffix(prefix, "/") {
				return &layers[i]
			}
		}
	}
	return nil
}

func allowed(l *layer, imported string) bool {
	if layerOf(imported) == l {
		return true
	}
	for _, prefix := range l.may {
		if strings.HasPrefix(imported, prefix) || imported == strings.TrimSuffix(prefix, "/") {
			return true
		}
	}
	return false
}

func main() {
	// Test files count too: a test that imports across layers ties them
	// as much as the code does.
	out, err := exec.Command("go", "list", "-tags=fieldsv1string", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify-imports: go list:", err)
		os.Exit(2)
	}
	var violations []string
	scanner := bufio.NewScanner(bytes.NewReader(out))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		l := layerOf(pkg)
		if l == nil {
			violations = append(violations, fmt.Sprintf("%s: in no layer of hack/verify-imports", pkg))
			continue
		}
		for _, imp := range fields[1:] {
			own, ok := strings.CutPrefix(imp, module)
			if !ok || own == pkg {
				continue
			}
			if !allowed(l, own) {
				violations = append(violations, fmt.Sprintf("%s (%s) imports %s", pkg, l.name, own))
			}
		}
	}
	sort.Strings(violations)
	violations = dedupe(violations)
	links, err := linked()
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify-imports:", err)
		os.Exit(2)
	}
	if len(violations) > 0 {
		fmt.Fprintln(os.Stderr, "Imports across layers (see docs/architecture.md, \"Layers\"):")
		for _, v := range violations {
			fmt.Fprintln(os.Stderr, "  "+v)
		}
	}
	if len(links) > 0 {
		fmt.Fprintln(os.Stderr, "Modules a command must not link:")
		for _, v := range links {
			fmt.Fprintln(os.Stderr, "  "+v)
		}
	}
	if len(violations) > 0 || len(links) > 0 {
		os.Exit(1)
	}
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
