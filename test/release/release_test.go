// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package release tests make release as a landscape uses a release: it
// makes one offline with a key pair of its own, copies the exported OCI
// layout to a registry as a mirror would, verifies every image's signature
// and SBOM attestation there with cosign (and sees a tampered image and a
// foreign key refused), checks the SHA-256 sums and that the rendered
// manifests and the Helm chart (verified there too, and rendered from it
// with helm) pin exactly the released digests, and installs the kubectl
// plugin with krew from the krew manifest and the local archive and runs it.
package release

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/localregistry"
	"github.com/clustergate/clustergate/internal/release"
)

const version = "v0.1.0-rc.1"

// releasedImage is an image of release.json.
type releasedImage struct {
	Artifact, Reference, Digest, SBOM string
}

// released is the part of release.json the test reads.
type released struct {
	Version   string          `json:"version"`
	Images    []releasedImage `json:"images"`
	PublicKey string          `json:"publicKey"`
	Manifests []string        `json:"manifests"`
	Plugin    []string        `json:"plugin"`
	Krew      string          `json:"krew"`
	Chart     struct {
		Archive, Reference, Digest string
	} `json:"chart"`
	ComponentDescriptor string `json:"componentDescriptor"`
}

// repoRoot is the checkout this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs a command in dir with env added, and returns its combined
// output and error.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := repoRoot(t)
	if out, err := run(ctx, root, nil, "hack/tools/build.sh", "cosign", "krew", "helm"); err != nil {
		t.Fatalf("building cosign, krew and helm: %v\n%s", err, out)
	}
	bin := filepath.Join(root, "_output", "bin")
	cosign, krew, helm := filepath.Join(bin, "cosign"), filepath.Join(bin, "krew"), filepath.Join(bin, "helm")
	work := t.TempDir()

	// The landscape's own key, with a password, as SIGNING_KEY.
	keyEnv := []string{"COSIGN_PASSWORD=release-test"}
	if out, err := run(ctx, work, keyEnv, cosign, "generate-key-pair", "--output-key-prefix", "landscape"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	if out, err := run(ctx, work, []string{"COSIGN_PASSWORD=other"}, cosign, "generate-key-pair", "--output-key-prefix", "other"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	output := filepath.Join(work, "release")
	platform := "linux/" + runtime.GOARCH
	start := time.Now()
	out, err := run(ctx, root, append(keyEnv, "REGISTRY=", "SIGNING_KEY="+filepath.Join(work, "landscape.key")),
		"go", "run", "-tags=fieldsv1string", "./hack/release", "-version", version, "-output", output, "-platforms", platform)
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("released %s in %s", version, time.Since(start).Round(time.Second))
	var rel released
	readJSON(t, filepath.Join(output, "release.json"), &rel)
	if rel.Version != version || len(rel.Images) != 2 {
		t.Fatalf("release.json: %+v", rel)
	}

	t.Run("SHA256SUMS covers every file and matches", func(t *testing.T) {
		sums, err := os.ReadFile(filepath.Join(output, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(append(append([]string{rel.Krew, rel.PublicKey, "release.json", rel.Chart.Archive, rel.ComponentDescriptor}, rel.Manifests...), rel.Plugin...), "oci/index.json") {
			if !strings.Contains(string(sums), "  "+f+"\n") {
				t.Errorf("SHA256SUMS lacks %s", f)
			}
		}
		if out, err := run(ctx, output, nil, "sha256sum", "--strict", "-c", "SHA256SUMS"); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
	})

	// A mirror: oci/ copied to the landscape's registry.
	mirror, err := localregistry.Start(localregistry.Options{BlobDir: filepath.Join(work, "mirror")})
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	if _, err := images.PushLayout(ctx, filepath.Join(output, "oci"), mirror.Host); err != nil {
		t.Fatalf("copying oci/ to the mirror: %v", err)
	}
	pub := filepath.Join(output, rel.PublicKey)
	// verify runs cosign verify or verify-attestation against the mirror,
	// trusting the key alone (the release used no transparency log).
	verify := func(command string, args ...string) (string, error) {
		return run(ctx, work, nil, cosign, append([]string{command, "--allow-http-registry", "--insecure-ignore-tlog=true"}, args...)...)
	}
	for _, img := range rel.Images {
		repo := mirror.Host + "/" + strings.TrimPrefix(img.Artifact, "ghcr.io/")
		byDigest := repo + "@" + img.Digest
		t.Run("signature of "+img.Artifact, func(t *testing.T) {
			out, err := verify("verify", "--key", pub, byDigest)
			if err != nil {
				t.Fatalf("cosign verify %s: %v\n%s", byDigest, err, out)
			}
			if !strings.Contains(out, `"docker-manifest-digest":"`+img.Digest+`"`) {
				t.Errorf("cosign verify printed no claim of %s:\n%s", img.Digest, out)
			}
			if out, err := verify("verify", "--key", filepath.Join(work, "other.pub"), byDigest); err == nil {
				t.Errorf("cosign verify with a key that did not sign passed:\n%s", out)
			}
		})
		t.Run("SBOM attestation of "+img.Artifact, func(t *testing.T) {
			out, err := verify("verify-attestation", "--key", pub, "--type", "spdxjson", byDigest)
			if err != nil {
				t.Fatalf("cosign verify-attestation %s: %v\n%s", byDigest, err, out)
			}
			sbom := attestedSBOM(t, out, img.Digest)
			var onDisk map[string]any
			readJSON(t, filepath.Join(output, img.SBOM), &onDisk)
			if sbom["documentNamespace"] != onDisk["documentNamespace"] {
				t.Errorf("the attested SBOM is %v, want %s's", sbom["documentNamespace"], img.SBOM)
			}
			// What was linked into the image's binaries, by module.
			want := map[string]string{"ghcr.io/clustergate/clustergate-apiserver": "k8s.io/apiserver", "ghcr.io/clustergate/etcd": "go.etcd.io/etcd/server/v3"}[img.Artifact]
			if names := packageNames(sbom); !slices.Contains(names, want) || !slices.Contains(names, "stdlib") {
				t.Errorf("the SBOM of %s lists %d packages without %s or stdlib", img.Artifact, len(names), want)
			}
		})
	}
	t.Run("a tampered image is refused", func(t *testing.T) {
		// The server's tag moved to an image with a layer added.
		i := slices.IndexFunc(rel.Images, func(img releasedImage) bool { return strings.HasSuffix(img.Artifact, "/clustergate-apiserver") })
		if i < 0 {
			t.Fatalf("release.json has no server image: %+v", rel.Images)
		}
		server := rel.Images[i]
		tag, err := name.NewTag(mirror.Host+"/"+strings.TrimPrefix(server.Artifact, "ghcr.io/")+":"+version, name.StrictValidation)
		if err != nil {
			t.Fatal(err)
		}
		orig, err := remote.Image(tag, remote.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		extra, err := random.Layer(1024, "application/vnd.oci.image.layer.v1.tar+gzip")
		if err != nil {
			t.Fatal(err)
		}
		tampered, err := mutate.AppendLayers(orig, extra)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(tag, tampered, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		digest, err := tampered.Digest()
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range []string{tag.String(), tag.Context().Name() + "@" + digest.String()} {
			if out, err := verify("verify", "--key", pub, ref); err == nil {
				t.Errorf("cosign verify of the tampered %s passed:\n%s", ref, out)
			}
		}
	})

	t.Run("manifests pin the released digests", func(t *testing.T) {
		digests := map[string]string{}
		for _, img := range rel.Images {
			digests[img.Artifact] = img.Digest
		}
		imageLine := regexp.MustCompile(`(?m)^\s*image:\s*(\S+)$`)
		for _, m := range rel.Manifests {
			content, err := os.ReadFile(filepath.Join(output, m))
			if err != nil {
				t.Fatal(err)
			}
			for _, match := range imageLine.FindAllStringSubmatch(string(content), -1) {
				repo, digest, ok := strings.Cut(match[1], "@")
				if !ok || digests[repo] != digest {
					t.Errorf("%s names image %s, want one of %v by digest", m, match[1], digests)
				}
			}
		}
		if len(rel.Manifests) != len(release.Layouts) {
			t.Errorf("manifests %v, want one per layout (%d)", rel.Manifests, len(release.Layouts))
		}
	})

	t.Run("the chart is signed and pins the released digests", func(t *testing.T) {
		chartVersion := strings.TrimPrefix(version, "v")
		if rel.Chart.Archive != "chart/clustergate-"+chartVersion+".tgz" || !strings.HasSuffix(rel.Chart.Reference, "/clustergate/charts/clustergate:"+chartVersion) {
			t.Fatalf("release.json's chart: %+v", rel.Chart)
		}
		repo := mirror.Host + "/clustergate/charts/clustergate"
		if out, err := verify("verify", "--key", pub, repo+"@"+rel.Chart.Digest); err != nil {
			t.Fatalf("cosign verify of the chart: %v\n%s", err, out)
		}
		if out, err := verify("verify", "--key", filepath.Join(work, "other.pub"), repo+"@"+rel.Chart.Digest); err == nil {
			t.Errorf("cosign verify of the chart with a key that did not sign passed:\n%s", out)
		}
		// As a landscape installs it: from its mirror, by the version.
		env := []string{"HELM_CACHE_HOME=" + filepath.Join(work, "helm"), "HELM_CONFIG_HOME=" + filepath.Join(work, "helm"), "HELM_DATA_HOME=" + filepath.Join(work, "helm")}
		rendered, err := run(ctx, work, env, helm, "template", "clustergate", "oci://"+repo, "--version", chartVersion, "--plain-http",
			"--namespace", "clustergate-system")
		if err != nil {
			t.Fatalf("helm template from the mirror: %v\n%s", err, rendered)
		}
		if !strings.Contains(rendered, "Digest: "+rel.Chart.Digest) {
			t.Errorf("helm pulled another digest than the released %s:\n%.300s", rel.Chart.Digest, rendered)
		}
		digests := map[string]string{}
		for _, img := range rel.Images {
			digests[img.Artifact] = img.Digest
		}
		matches := regexp.MustCompile(`(?m)^\s*image:\s*(\S+)$`).FindAllStringSubmatch(rendered, -1)
		if len(matches) < 2 {
			t.Fatalf("the chart renders %d images", len(matches))
		}
		for _, match := range matches {
			if repo, digest, ok := strings.Cut(match[1], "@"); !ok || digests[repo] != digest {
				t.Errorf("the chart names image %s, want one of %v by digest", match[1], digests)
			}
		}
	})

	t.Run("the OCM component descriptor names every artifact by its digest", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(output, rel.ComponentDescriptor))
		if err != nil {
			t.Fatal(err)
		}
		var d release.ComponentDescriptor
		if err := yaml.UnmarshalStrict(raw, &d); err != nil {
			t.Fatal(err)
		}
		if errs := d.Validate(); len(errs) > 0 {
			t.Fatalf("the descriptor breaks the v2 schema's rules: %v", errs)
		}
		if d.Component.Name != release.ComponentName || d.Component.Version != version {
			t.Errorf("component %s %s", d.Component.Name, d.Component.Version)
		}
		// What each resource must be, by its digest.
		want := map[string]string{"chart": strings.TrimPrefix(rel.Chart.Digest, "sha256:")}
		for _, img := range rel.Images {
			want[filepath.Base(img.Artifact)] = strings.TrimPrefix(img.Digest, "sha256:")
		}
		for i, m := range rel.Manifests {
			sum, err := release.FileSHA256(filepath.Join(output, m))
			if err != nil {
				t.Fatal(err)
			}
			want["manifest "+release.Layouts[i].Name] = sum
		}
		for _, a := range rel.Plugin {
			sum, err := release.FileSHA256(filepath.Join(output, a))
			if err != nil {
				t.Fatal(err)
			}
			want["kubectl-session "+platform] = sum
		}
		got := map[string]string{}
		for _, r := range d.Component.Resources {
			key := r.Name
			switch r.Name {
			case "manifest":
				key += " " + r.ExtraIdentity["layout"]
			case "kubectl-session":
				key += " " + r.ExtraIdentity["os"] + "/" + r.ExtraIdentity["architecture"]
			}
			got[key] = r.Digest.Value
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the descriptor's digests differ from the release's (-release +descriptor):\n%s", diff)
		}
	})

	t.Run("krew installs the plugin from the manifest and archive", func(t *testing.T) {
		krewRoot := filepath.Join(work, "krew")
		env := []string{"KREW_ROOT=" + krewRoot}
		archive := filepath.Join(output, rel.Plugin[0])
		if out, err := run(ctx, work, env, krew, "install", "--manifest="+filepath.Join(output, rel.Krew), "--archive="+archive); err != nil {
			t.Fatalf("krew install: %v\n%s", err, out)
		}
		env = append(env, "PATH="+filepath.Join(krewRoot, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := run(ctx, work, env, "kubectl", release.KrewName, "open", "--help")
		if err != nil {
			t.Fatalf("kubectl %s open --help: %v\n%s", release.KrewName, err, out)
		}
		if !strings.Contains(out, "kubectl "+release.KrewName+" open shoot/") {
			t.Errorf("kubectl %s open --help does not name the command as typed:\n%s", release.KrewName, out)
		}
		// krew keeps a receipt of what it installed, for upgrade and
		// uninstall (krew list would want its index, which is online).
		receipt, err := os.ReadFile(filepath.Join(krewRoot, "receipts", release.KrewName+".yaml"))
		if err != nil || !strings.Contains(string(receipt), "version: "+version) {
			t.Errorf("krew's receipt: %v\n%s", err, receipt)
		}
	})
}

// attestedSBOM decodes the in-toto statement cosign verify-attestation
// printed and returns its predicate, after checking that its subject is
// the image of digest.
func attestedSBOM(t *testing.T, out, digest string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var envelope struct {
			Payload string `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &envelope) != nil || envelope.Payload == "" {
			continue
		}
		payload, err := base64.StdEncoding.DecodeString(envelope.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var statement struct {
			PredicateType string `json:"predicateType"`
			Subject       []struct {
				Digest map[string]string `json:"digest"`
			} `json:"subject"`
			Predicate map[string]any `json:"predicate"`
		}
		if err := json.NewDecoder(bytes.NewReader(payload)).Decode(&statement); err != nil {
			t.Fatal(err)
		}
		if len(statement.Subject) != 1 || "sha256:"+statement.Subject[0].Digest["sha256"] != digest {
			t.Fatalf("the attestation's subject is %+v, want %s", statement.Subject, digest)
		}
		if statement.PredicateType != "https://spdx.dev/Document" {
			t.Fatalf("predicate type %s", statement.PredicateType)
		}
		return statement.Predicate
	}
	t.Fatalf("cosign verify-attestation printed no envelope:\n%s", out)
	return nil
}

// packageNames are the names of an SPDX document's packages.
func packageNames(doc map[string]any) []string {
	var names []string
	packages, _ := doc["packages"].([]any)
	for _, p := range packages {
		if m, ok := p.(map[string]any); ok {
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	return names
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
