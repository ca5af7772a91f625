// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command release makes a release (make release VERSION=vX.Y.Z) into
// -output (default _output/release/), offline:
//
//   - the images of make images, labelled and tagged with the version,
//     pushed to REGISTRY, each signed by digest with cosign and given an
//     SPDX SBOM attestation (sbom/); without REGISTRY they go to a
//     registry of its own on 127.0.0.1 and are exported with their
//     signatures and attestations to the OCI layout oci/;
//   - the install manifests of every shipped layout with the images
//     pinned by digest (manifests/);
//   - the Helm chart generated from artifacts/ with the images pinned by
//     digest (chart/), pushed to REGISTRY as an OCI artifact and signed
//     by digest;
//   - kubectl-session archives per OS/arch and the krew manifest
//     (plugin/);
//   - the OCM component descriptor (component-descriptor.yaml) naming
//     the images, the chart, the manifests and the archives by digest;
//   - SHA256SUMS over all files, and release.json naming what was pushed.
//
// Signing uses SIGNING_KEY (a cosign private key; COSIGN_PASSWORD unlocks
// it) with no transparency log, as a landscape's own pipeline or an
// air-gapped one signs; without SIGNING_KEY it makes a throwaway key pair
// in the output, for tests. Keyless signing belongs to the real release
// pipeline: docs/operations.md, "Verifying a release".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/clustergate/clustergate/hack/internal/command"
	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/localregistry"
	"github.com/clustergate/clustergate/internal/release"
)

// semver is a release version: vMAJOR.MINOR.PATCH with an optional
// pre-release, as tags, krew and Helm accept.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// options are a release's inputs.
type options struct {
	root, output, version, registry, key, downloadURL string
	platforms                                         []release.Platform
}

func main() {
	root, _ := os.Getwd()
	o := options{root: root}
	flag.StringVar(&o.output, "output", filepath.Join(root, "_output", "release"), "directory the release is written to (emptied first)")
	flag.StringVar(&o.version, "version", os.Getenv("VERSION"), "the release's version, vX.Y.Z[-pre]; default $VERSION")
	flag.StringVar(&o.registry, "registry", os.Getenv("REGISTRY"),
		"registry (host[:port][/path]) the images are pushed to; default $REGISTRY, none: a local one, exported to oci/")
	flag.StringVar(&o.key, "key", os.Getenv("SIGNING_KEY"),
		"cosign private key the images are signed with (COSIGN_PASSWORD unlocks it); default $SIGNING_KEY, none: a throwaway pair")
	platforms := flag.String("platforms", envOr("PLATFORMS", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64"),
		"OS/arch list of the kubectl plugin's archives; default $PLATFORMS")
	flag.StringVar(&o.downloadURL, "download-url", "",
		"where the plugin's archives are downloaded from, for the krew manifest; default the GitHub release of the version")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := func() error {
		if !semver.MatchString(o.version) {
			return fmt.Errorf("VERSION %q is not vMAJOR.MINOR.PATCH[-PRERELEASE]", o.version)
		}
		for _, s := range strings.Split(*platforms, ",") {
			p, err := release.ParsePlatform(strings.TrimSpace(s))
			if err != nil {
				return err
			}
			o.platforms = append(o.platforms, p)
		}
		if o.downloadURL == "" {
			o.downloadURL = "https://github.com/clustergate/clustergate/releases/download/" + o.version
		}
		return run(ctx, o)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func logf(format string, args ...any) { fmt.Printf("release: "+format+"\n", args...) }

// pushedImage is an image of the release: what the artifacts call it and
// where it went. release.json lists them.
type pushedImage struct {
	// Artifact is the reference artifacts/ carries, without tag.
	Artifact string `json:"artifact"`
	// Reference is repository:tag as pushed, Digest its digest.
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	// SBOM is the SPDX document attested to it, under sbom/.
	SBOM string `json:"sbom"`
	// tag is Reference parsed, binaries are the Go binaries in the image,
	// for the SBOM.
	tag      name.Tag
	binaries []string
}

// repository is where the manifests and the SBOM say the image is: where
// it was pushed, or, when the release pushed to a registry of its own,
// where artifacts/ names it, since its digest stays the same wherever
// oci/ is copied to.
func (img pushedImage) repository(registry string) string {
	if registry == "" {
		return img.Artifact
	}
	return img.tag.Context().Name()
}

// manifest is release.json.
type manifest struct {
	Version   string        `json:"version"`
	Revision  string        `json:"revision"`
	Images    []pushedImage `json:"images"`
	PublicKey string        `json:"publicKey"`
	Manifests []string      `json:"manifests"`
	Plugin    []string      `json:"plugin"`
	Krew      string        `json:"krew"`
	Chart     chartRelease  `json:"chart"`
	// ComponentDescriptor is the OCM component descriptor's file.
	ComponentDescriptor string `json:"componentDescriptor"`
}

func run(ctx context.Context, o options) error {
	start := time.Now()
	if err := os.RemoveAll(o.output); err != nil {
		return err
	}
	for _, d := range []string{"sbom", "manifests", "chart", "plugin", "work"} {
		if err := os.MkdirAll(filepath.Join(o.output, d), 0o755); err != nil {
			return err
		}
	}
	revision, err := command.Output(ctx, o.root, "git", "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	// Archives and SBOMs carry the commit's time, so that the same commit
	// released twice gives the same bytes.
	epoch, err := command.Output(ctx, o.root, "git", "log", "-1", "--format=%ct")
	if err != nil {
		return err
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return err
	}
	committed := time.Unix(secs, 0).UTC()
	if err := command.Run(ctx, o.root, nil, "hack/tools/build.sh", "cosign", "helm"); err != nil {
		return err
	}
	cosign, helm := filepath.Join(o.root, "_output", "bin", "cosign"), filepath.Join(o.root, "_output", "bin", "helm")

	imageDir := filepath.Join(o.output, "work", "images")
	if err := command.Run(ctx, o.root, nil, "go", "run", "-tags=fieldsv1string", "./hack/images",
		"-version", o.version, "-output", imageDir); err != nil {
		return err
	}
	registry := o.registry
	if registry == "" {
		r, err := localregistry.Start(localregistry.Options{BlobDir: filepath.Join(o.output, "work", "registry")})
		if err != nil {
			return err
		}
		defer r.Close()
		registry = r.Host
		logf("no REGISTRY: pushing to a registry of its own on %s, exported to oci/ at the end", registry)
	}
	pushed, err := images.PushLayout(ctx, filepath.Join(imageDir, "oci"), registry)
	if err != nil {
		return err
	}
	arch, err := command.Output(ctx, o.root, "go", "env", "GOARCH")
	if err != nil {
		return err
	}
	etcdBin, err := filepath.EvalSymlinks(filepath.Join(o.root, "_output", "bin", "etcd"))
	if err != nil {
		return err
	}
	var imgs []pushedImage
	for _, p := range pushed {
		repo := p.Reference.Context().RepositoryStr()
		img := pushedImage{Reference: p.Reference.String(), Digest: p.Digest.String(), tag: p.Reference}
		switch {
		case repo == images.APIServerRepository && p.Reference.TagStr() == o.version:
			img.binaries = []string{filepath.Join(imageDir, "bin", "linux-"+arch, "clustergate-apiserver")}
		case repo == images.EtcdRepository:
			for _, b := range images.EtcdBinaries {
				img.binaries = append(img.binaries, filepath.Join(filepath.Dir(etcdBin), b))
			}
		default:
			continue // latest: the same digest as the version's tag
		}
		img.Artifact = "ghcr.io/" + repo
		img.SBOM = filepath.Join("sbom", filepath.Base(repo)+".spdx.json")
		imgs = append(imgs, img)
	}
	if len(imgs) != 2 {
		return fmt.Errorf("pushed %v: want the server tagged %s and etcd", pushed, o.version)
	}

	key, pub, keyEnv, err := signingKey(ctx, o, cosign)
	if err != nil {
		return err
	}
	// No transparency log (--use-signing-config=false --tlog-upload=false):
	// the key is the trust root, and the release stays offline.
	common := []string{"--key", key, "--use-signing-config=false", "--tlog-upload=false", "--yes", "--allow-http-registry"}
	for _, img := range imgs {
		sbom, err := release.SBOM(release.SBOMImage{Repository: img.repository(o.registry), Version: img.tag.TagStr(),
			Digest: img.Digest, Binaries: img.binaries, Created: committed})
		if err != nil {
			return err
		}
		sbomPath := filepath.Join(o.output, img.SBOM)
		if err := os.WriteFile(sbomPath, sbom, 0o644); err != nil {
			return err
		}
		byDigest := img.tag.Context().Name() + "@" + img.Digest
		if err := command.Run(ctx, o.output, keyEnv, cosign, append(append([]string{"sign"}, common...), byDigest)...); err != nil {
			return err
		}
		if err := command.Run(ctx, o.output, keyEnv, cosign, append(append([]string{"attest"}, common...),
			"--type", "spdxjson", "--predicate", sbomPath, byDigest)...); err != nil {
			return err
		}
		logf("signed %s and attested its SBOM %s", byDigest, img.SBOM)
	}

	var pinned []release.Image
	for _, img := range imgs {
		pinned = append(pinned, release.Image{Name: img.Artifact, NewName: img.repository(o.registry), Digest: img.Digest})
	}
	m := manifest{Version: o.version, Revision: revision, Images: imgs, PublicKey: filepath.Base(pub)}
	for _, l := range release.Layouts {
		rendered, err := release.RenderLayout(ctx, "kubectl", filepath.Join(o.root, "artifacts"),
			filepath.Join(o.output, "work", "render"), l, pinned)
		if err != nil {
			return err
		}
		file := filepath.Join("manifests", "clustergate-"+l.Name+".yaml")
		if err := os.WriteFile(filepath.Join(o.output, file), rendered, 0o644); err != nil {
			return err
		}
		m.Manifests = append(m.Manifests, file)
	}
	logf("rendered %d layouts into manifests/", len(m.Manifests))
	if m.Chart, err = releaseChart(ctx, o, registry, helm, pinned); err != nil {
		return err
	}
	if err := command.Run(ctx, o.output, keyEnv, cosign, append(append([]string{"sign"}, common...),
		m.Chart.tag.Context().Name()+"@"+m.Chart.Digest)...); err != nil {
		return err
	}
	logf("pushed the chart %s (%s) and signed it", m.Chart.Reference, m.Chart.Digest)

	var archives []release.Archive
	for _, p := range o.platforms {
		bin := filepath.Join(o.output, "work", "plugin", p.OS+"-"+p.Arch, "kubectl-session")
		if err := command.Run(ctx, o.root, []string{"CGO_ENABLED=0", "GOOS=" + p.OS, "GOARCH=" + p.Arch}, "go", "build",
			"-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/kubectl-session"); err != nil {
			return err
		}
		a, err := release.WritePluginArchive(filepath.Join(o.output, "plugin"), o.version, p, bin,
			filepath.Join(o.root, "LICENSE"), committed)
		if err != nil {
			return err
		}
		archives = append(archives, a)
		m.Plugin = append(m.Plugin, filepath.Join("plugin", a.Name))
	}
	krew, err := release.KrewManifest(o.version, o.downloadURL, archives)
	if err != nil {
		return err
	}
	m.Krew = filepath.Join("plugin", release.KrewName+".yaml")
	if err := os.WriteFile(filepath.Join(o.output, m.Krew), krew, 0o644); err != nil {
		return err
	}
	logf("plugin archives for %d platforms and the krew manifest %s", len(archives), m.Krew)

	if m.ComponentDescriptor, err = writeDescriptor(o, revision, committed, m, imgs, archives); err != nil {
		return err
	}
	logf("the OCM component descriptor %s", m.ComponentDescriptor)

	if o.registry == "" {
		repos := []name.Repository{m.Chart.tag.Context()}
		for _, img := range imgs {
			repos = append(repos, img.tag.Context())
		}
		if err := export(ctx, registry, repos, filepath.Join(o.output, "oci")); err != nil {
			return err
		}
		logf("exported the images and the chart with their signatures and attestations to oci/")
	}
	summary, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.output, "release.json"), append(summary, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(o.output, "work")); err != nil {
		return err
	}
	if err := writeSums(o.output); err != nil {
		return err
	}
	logf("%s in %s (%s)", o.version, o.output, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// signingKey is the cosign key pair the release signs with, and what
// cosign's environment needs to unlock it: o.key (its public key written
// into the output) with COSIGN_PASSWORD as given, or a throwaway pair
// without password in the output.
func signingKey(ctx context.Context, o options, cosign string) (key, pub string, env []string, err error) {
	pub = filepath.Join(o.output, "cosign.pub")
	if o.key != "" {
		if key, err = filepath.Abs(o.key); err != nil {
			return "", "", nil, err
		}
		out, err := exec.CommandContext(ctx, cosign, "public-key", "--key", key).Output()
		if err != nil {
			return "", "", nil, fmt.Errorf("reading the public key of %s (is COSIGN_PASSWORD set?): %w", key, err)
		}
		return key, pub, nil, os.WriteFile(pub, out, 0o644)
	}
	logf("no SIGNING_KEY: signing with a throwaway key pair (cosign.key, cosign.pub), good for tests only")
	env = []string{"COSIGN_PASSWORD="}
	prefix := filepath.Join(o.output, "cosign")
	if err := command.Run(ctx, o.output, env, cosign, "generate-key-pair", "--output-key-prefix", prefix); err != nil {
		return "", "", nil, err
	}
	return prefix + ".key", pub, env, nil
}
