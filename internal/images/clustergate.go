// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package images

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The images make images builds, by repository (without registry), and
// what the artifacts and tests match on.
const (
	// APIServerRepository is clustergate-apiserver's image; artifacts/server
	// names it under ghcr.io.
	APIServerRepository = "clustergate/clustergate-apiserver"
	// EtcdRepository is the pinned etcd with etcdctl and etcdutl.
	EtcdRepository = "clustergate/etcd"

	// UID and GID run both images: distroless' "nonroot", which the
	// manifests' runAsUser and fsGroup name too.
	UID = 65532
	GID = 65532

	// APIServerBinary is clustergate-apiserver's path and entrypoint, as in
	// the former Dockerfile.
	APIServerBinary = "/clustergate-apiserver"
	// APIServerDataDir is where the Deployment's --data-dir points, owned by
	// the image's user and its working directory, so that a server started
	// without --data-dir writes there too (the default is relative).
	APIServerDataDir = "/var/lib/clustergate"
	// EtcdBinDir holds etcd, etcdctl and etcdutl and is the image's PATH:
	// the StatefulSet's `command: [etcd, ...]` and the snapshot CronJob's
	// `etcdctl snapshot save` name them without a path.
	EtcdBinDir = "/usr/local/bin"
	// EtcdDataDir is the StatefulSet's --data-dir, owned by the image's user
	// with the 0700 etcd insists on.
	EtcdDataDir = "/var/lib/etcd"

	// CABundle is where Go's crypto/x509 looks first on Linux.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"

	// Source is the org.opencontainers.image.source of clustergate's image.
	Source = "https://github.com/clustergate/clustergate"
	// EtcdSource is the org.opencontainers.image.source of the etcd image:
	// it packages etcd's code, built from its module.
	EtcdSource = "https://github.com/etcd-io/etcd"
)

// BuildInfo describes the build the images come from.
type BuildInfo struct {
	// Version and Revision label clustergate's image (the git commit, with
	// "-dirty" for uncommitted changes).
	Version, Revision string
	// EtcdVersion is the pinned etcd module version, e.g. v3.7.3.
	EtcdVersion string
	// Architecture is the binaries' GOARCH.
	Architecture string
}

// labels are the OCI annotations of an image's configuration.
func labels(title, source, version, revision string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// BaseLayer is the layer both images share (one blob in a registry): the
// user, CA certificates, /tmp and a home. Nothing in it executes: there is
// no shell and no libc, the binaries are static.
func BaseLayer() (Layer, error) {
	cas, err := caCertificates()
	if err != nil {
		return Layer{}, err
	}
	dir := func(p string, mode int64) File { return File{Path: p, Mode: mode, Dir: true} }
	return Layer{
		CreatedBy: "make images: base (user nonroot 65532, CA certificates, /tmp)",
		Files: []File{
			dir("/etc", 0o755),
			{Path: "/etc/passwd", Mode: 0o644, Content: []byte(
				"root:x:0:0:root:/root:/sbin/nologin\n" +
					"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
			{Path: "/etc/group", Mode: 0o644, Content: []byte("root:x:0:\nnonroot:x:65532:\n")},
			dir("/etc/ssl", 0o755),
			dir("/etc/ssl/certs", 0o755),
			{Path: CABundle, Mode: 0o644, Content: cas},
			dir("/home", 0o755),
			{Path: "/home/nonroot", Mode: 0o700, UID: UID, GID: GID, Dir: true},
			dir("/root", 0o700),
			dir("/tmp", 0o1777),
		},
	}, nil
}

// caCertificates is the Mozilla (NSS) root bundle of
// golang.org/x/crypto/x509roots/fallback, pinned in go.mod: the same bytes
// on every machine, unlike the host's bundle. The server verifies
// Gardener's and targets' TLS with it when their kubeconfigs carry no CA.
// Roots with constraints a PEM file cannot carry (distrust after a date)
// are left out, trusting less rather than more.
func caCertificates() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, fmt.Errorf("no CA certificates in golang.org/x/crypto/x509roots/fallback/bundle")
	}
	return buf.Bytes(), nil
}

// APIServer is clustergate-apiserver's image, from a static binary.
func APIServer(base Layer, binary string, b BuildInfo) Spec {
	return Spec{
		Repository:   APIServerRepository,
		Tags:         []string{"latest", b.Version},
		Architecture: b.Architecture,
		Layers: []Layer{base, {
			CreatedBy: "make images: clustergate-apiserver " + b.Version,
			Files: []File{
				{Path: APIServerBinary, Mode: 0o755, Source: binary},
				{Path: "/var", Mode: 0o755, Dir: true},
				{Path: "/var/lib", Mode: 0o755, Dir: true},
				{Path: APIServerDataDir, Mode: 0o700, UID: UID, GID: GID, Dir: true},
			},
		}},
		Entrypoint: []string{APIServerBinary},
		// A command that names clustergate-apiserver without a path finds it.
		Env:        []string{"PATH=/"},
		WorkingDir: APIServerDataDir,
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Labels:     labels("clustergate-apiserver", Source, b.Version, b.Revision),
	}
}

// EtcdBinaries are the programs of the etcd image, all from
// hack/tools/etcd at the pinned version.
var EtcdBinaries = []string{"etcd", "etcdctl", "etcdutl"}

// Etcd is the etcd image: etcd, etcdctl and etcdutl from binDir, static.
// Its revision label is the release tag, the revision the module proxy's
// version names.
func Etcd(base Layer, binDir string, b BuildInfo) Spec {
	files := []File{
		{Path: "/usr", Mode: 0o755, Dir: true},
		{Path: "/usr/local", Mode: 0o755, Dir: true},
		{Path: EtcdBinDir, Mode: 0o755, Dir: true},
		{Path: "/var", Mode: 0o755, Dir: true},
		{Path: "/var/lib", Mode: 0o755, Dir: true},
		{Path: EtcdDataDir, Mode: 0o700, UID: UID, GID: GID, Dir: true},
	}
	for _, name := range EtcdBinaries {
		files = append(files, File{Path: EtcdBinDir + "/" + name, Mode: 0o755, Source: filepath.Join(binDir, name)})
	}
	return Spec{
		Repository:   EtcdRepository,
		Tags:         []string{b.EtcdVersion},
		Architecture: b.Architecture,
		Layers: []Layer{base, {
			CreatedBy: "make images: etcd, etcdctl, etcdutl " + b.EtcdVersion + " (hack/tools/etcd)",
			Files:     files,
		}},
		Entrypoint: []string{EtcdBinDir + "/etcd"},
		Env:        []string{"PATH=" + EtcdBinDir},
		WorkingDir: EtcdDataDir,
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Labels:     labels("etcd", EtcdSource, strings.TrimPrefix(b.EtcdVersion, "v"), b.EtcdVersion),
	}
}
