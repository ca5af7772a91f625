// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package workloads

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// registry serves images over the OCI distribution API's pull side, on
// plain HTTP at 127.0.0.1: what the process node pulls from. It is the
// test's own, so that the test needs no image library; the images of
// `make images` come from a full registry.
type registry struct {
	// manifests by "name:tag", blobs by digest.
	manifests map[string][]byte
	blobs     map[string][]byte
	host      string
}

// startRegistry serves r until the test ends.
func startRegistry(t *testing.T) *registry {
	r := &registry{manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	r.host = l.Addr().String()
	return r
}

// ServeHTTP answers /v2/, manifests by tag or digest, and blobs.
func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := strings.TrimPrefix(req.URL.Path, "/v2/")
	if path == "" {
		return
	}
	if i := strings.LastIndex(path, "/manifests/"); i > 0 {
		name, ref := path[:i], path[i+len("/manifests/"):]
		m, ok := r.manifests[name+":"+ref]
		if !ok {
			m, ok = r.blobs[ref]
		}
		if !ok {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", digest(m))
		w.Header().Set("Content-Length", fmt.Sprint(len(m)))
		if req.Method != http.MethodHead {
			_, _ = w.Write(m)
		}
		return
	}
	if i := strings.LastIndex(path, "/blobs/"); i > 0 {
		b, ok := r.blobs[path[i+len("/blobs/"):]]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if req.Method != http.MethodHead {
			_, _ = w.Write(b)
		}
		return
	}
	http.NotFound(w, req)
}

// digest is data's sha256 digest.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// imageFile is a file of a test image.
type imageFile struct {
	name string
	mode int64
	data []byte
	dir  bool
}

// push adds a one-layer image of files as name:tag, running entrypoint as
// user, and returns its reference.
func (r *registry) push(t *testing.T, name, tag string, files []imageFile, entrypoint []string, user string, env []string) string {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if f.dir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(layer.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	config := mustJSON(t, map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": entrypoint, "User": user, "Env": env, "WorkingDir": "/"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(layer.Bytes())}},
	})
	manifest := mustJSON(t, map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config), "size": len(config)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(gz.Bytes()), "size": gz.Len()}},
	})
	for _, b := range [][]byte{gz.Bytes(), config, manifest} {
		r.blobs[digest(b)] = b
	}
	r.manifests[name+":"+tag] = manifest
	return r.host + "/" + name + ":" + tag
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// podserverImage pushes the podserver binary as a static, shell-less image
// running as 65532.
func podserverImage(t *testing.T, r *registry, binary string) string {
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	return r.push(t, "test/podserver", "v1", []imageFile{
		{name: "bin/", mode: 0o755, dir: true},
		{name: "bin/podserver", mode: 0o755, data: data},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "tmp/", mode: 0o1777, dir: true},
	}, []string{"/bin/podserver"}, "nonroot", []string{"PATH=/bin", "IMAGE_ENV=from-image"})
}
