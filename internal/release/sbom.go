// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package release

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// SBOMImage is what an image's SBOM describes: the image by its digest and
// the Go binaries in it.
type SBOMImage struct {
	// Repository is where the image is pushed, such as
	// ghcr.io/clustergate/clustergate-apiserver.
	Repository string
	// Version is its tag.
	Version string
	// Digest is the manifest's digest, sha256:<hex>.
	Digest string
	// Binaries are paths of the Go binaries the image holds.
	Binaries []string
	// Created is when the document says it was made: the release commit's
	// time, so that a release made twice gives the same document.
	Created time.Time
}

// spdxDocument is the part of an SPDX 2.3 JSON document an SBOM of Go
// binaries needs.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string            `json:"SPDXID"`
	Name             string            `json:"name"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// SBOM writes an SPDX 2.3 JSON document of img: the image (its digest as
// checksum and package URL), each binary (its SHA-256, the Go toolchain it
// was built with) and every Go module linked into a binary with its
// version and package URL, as Kubernetes' own release SBOMs list them.
// Modules come from the build information Go writes into each binary, so
// the list is what was linked, not what go.mod names.
func SBOM(img SBOMImage) ([]byte, error) {
	name := img.Repository[strings.LastIndex(img.Repository, "/")+1:]
	hexDigest, ok := strings.CutPrefix(img.Digest, "sha256:")
	if !ok {
		return nil, fmt.Errorf("image digest %q is not sha256:<hex>", img.Digest)
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              img.Repository + ":" + img.Version,
		DocumentNamespace: "https://clustergate.dev/spdx/" + img.Repository + "/" + img.Digest,
		CreationInfo: spdxCreationInfo{
			Created:  img.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: clustergate", "Tool: clustergate-release-" + img.Version},
		},
	}
	image := spdxPackage{
		SPDXID:           "SPDXRef-Image",
		Name:             name,
		VersionInfo:      img.Version,
		DownloadLocation: "NOASSERTION",
		PrimaryPurpose:   "CONTAINER",
		Checksums:        []spdxChecksum{{Algorithm: "SHA256", Value: hexDigest}},
		ExternalRefs: []spdxExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl",
			Locator: fmt.Sprintf("pkg:oci/%s@%s?repository_url=%s&tag=%s", name, url.QueryEscape(img.Digest),
				url.QueryEscape(img.Repository), url.QueryEscape(img.Version))}},
	}
	doc.Packages = append(doc.Packages, image)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", image.SPDXID})
	modules := map[string]string{} // SPDXID by module@version
	for i, path := range img.Binaries {
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the Go build information of %s: %w", path, err)
		}
		sum, err := FileSHA256(path)
		if err != nil {
			return nil, err
		}
		binary := spdxPackage{
			SPDXID:           fmt.Sprintf("SPDXRef-Binary-%d", i+1),
			Name:             filepath.Base(path),
			VersionInfo:      img.Version,
			DownloadLocation: "NOASSERTION",
			PrimaryPurpose:   "APPLICATION",
			Checksums:        []spdxChecksum{{Algorithm: "SHA256", Value: sum}},
		}
		if info.Main.Path != "" {
			binary.ExternalRefs = []spdxExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl",
				Locator: golangPURL(info.Main.Path, moduleVersion(info.Main.Version, img.Version))}}
		}
		doc.Packages = append(doc.Packages, binary)
		doc.Relationships = append(doc.Relationships, spdxRelationship{image.SPDXID, "CONTAINS", binary.SPDXID})
		deps := []struct{ path, version string }{{"stdlib", strings.TrimPrefix(info.GoVersion, "go")}}
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			deps = append(deps, struct{ path, version string }{d.Path, d.Version})
		}
		for _, d := range deps {
			key := d.path + "@" + d.version
			id, seen := modules[key]
			if !seen {
				id = fmt.Sprintf("SPDXRef-Go-%d", len(modules)+1)
				modules[key] = id
				doc.Packages = append(doc.Packages, spdxPackage{
					SPDXID:           id,
					Name:             d.path,
					VersionInfo:      d.version,
					DownloadLocation: "NOASSERTION",
					PrimaryPurpose:   "LIBRARY",
					ExternalRefs:     []spdxExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: golangPURL(d.path, d.version)}},
				})
			}
			doc.Relationships = append(doc.Relationships, spdxRelationship{binary.SPDXID, "DEPENDS_ON", id})
		}
	}
	// Packages after the image and binaries in a stable order, so that the
	// same binaries give the same document.
	fixed := 1 + len(img.Binaries)
	sort.SliceStable(doc.Packages[fixed:], func(i, j int) bool {
		a, b := doc.Packages[fixed+i], doc.Packages[fixed+j]
		return a.Name+"@"+a.VersionInfo < b.Name+"@"+b.VersionInfo
	})
	return json.MarshalIndent(doc, "", "  ")
}

// moduleVersion is the version of the main module: a binary built from a
// checkout reports "(devel)", which the release's version replaces.
func moduleVersion(v, release string) string {
	if v == "" || v == "(devel)" {
		return release
	}
	return v
}

// golangPURL is the package URL of a Go module (the purl spec's golang
// type: the module path as namespace and name, lowercased).
func golangPURL(path, version string) string {
	return "pkg:golang/" + strings.ToLower(path) + "@" + url.PathEscape(version)
}

// FileSHA256 is the SHA-256 of the file at path, in hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
