// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/cache"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// imageStore pulls images and keeps their layers on disk by digest, so that
// a pod's restart or a second replica does not fetch them again.
type imageStore struct {
	cache cache.Cache
	// mu makes one unpack at a time: the layer cache writes a layer's file
	// in place while the first reader streams it, so a second pod of the
	// same image started meanwhile would read a truncated layer and get a
	// rootfs without its entrypoint.
	mu sync.Mutex
}

// pullAndUnpack pulls ref and unpacks it into rootfs, one image at a time.
func (s *imageStore) pullAndUnpack(ctx context.Context, ref, rootfs string) (*pulledImage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, err := s.pull(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := unpack(img.image, rootfs); err != nil {
		return nil, err
	}
	return img, nil
}

// newImageStore keeps layers in dir.
func newImageStore(dir string) (*imageStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &imageStore{cache: cache.NewFilesystemCache(dir)}, nil
}

// pulledImage is an image resolved from its reference.
type pulledImage struct {
	image  v1.Image
	config *v1.ConfigFile
	// id is the reference by digest, the container status's imageID.
	id string
}

// pull resolves ref to the image for this machine's platform. Registries
// on plain HTTP (a local registry on 127.0.0.1) are allowed: the node runs
// only what its own control plane names.
func (s *imageStore) pull(ctx context.Context, ref string) (*pulledImage, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(r, remote.WithContext(ctx),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	img = cache.Image(img, s.cache)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config of %s: %w", ref, err)
	}
	return &pulledImage{image: img, config: cfg, id: r.Context().Digest(digest.String()).String()}, nil
}

// unpack writes the image's flattened file system (whiteouts applied) to
// dir, with the owners and modes the layers record. Every name is resolved
// inside dir (os.Root), so that a layer cannot write outside it.
func unpack(img v1.Image, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := unpackEntry(root, hdr, tr); err != nil {
			return fmt.Errorf("unpacking %s: %w", hdr.Name, err)
		}
	}
}

// unpackEntry writes one tar entry below root.
func unpackEntry(root *os.Root, hdr *tar.Header, r io.Reader) error {
	p := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
	if p == "" {
		return nil
	}
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	mode := fs.FileMode(hdr.Mode).Perm() | fs.FileMode(hdr.Mode)&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(p, 0o755); err != nil {
			return err
		}
	case tar.TypeReg:
		_ = root.Remove(p)
		f, err := root.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		_ = root.Remove(p)
		return root.Symlink(hdr.Linkname, p)
	case tar.TypeLink:
		_ = root.Remove(p)
		return root.Link(strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/"), p)
	default:
		// Devices and FIFOs: a container gets the host's /dev instead.
		return nil
	}
	if err := root.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	return root.Chmod(p, mode)
}

// imageUser reads an image's User ("uid", "uid:gid", "name" or
// "name:group") as numeric IDs, looking names up in the unpacked rootfs's
// /etc/passwd and /etc/group. An empty User is root.
func imageUser(user, rootfs string) (uid, gid int64, err error) {
	if user == "" {
		return 0, 0, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, ugid, err := lookupID(filepath.Join(rootfs, "etc", "passwd"), u, true)
	if err != nil {
		return 0, 0, err
	}
	gid = ugid
	if hasGroup {
		if gid, _, err = lookupID(filepath.Join(rootfs, "etc", "group"), g, false); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

// lookupID resolves a user (passwd) or group name, or a number, to its ID
// and, for a user, its primary group from the file (0 when the image has
// no entry, as runc does).
func lookupID(file, nameOrID string, passwd bool) (id, primaryGID int64, err error) {
	numeric, numErr := strconv.ParseInt(nameOrID, 10, 64)
	data, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		lineID, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || (f[0] != nameOrID && (numErr != nil || lineID != numeric)) {
			continue
		}
		if passwd && len(f) >= 4 {
			primaryGID, _ = strconv.ParseInt(f[3], 10, 64)
		}
		return lineID, primaryGID, nil
	}
	if numErr == nil {
		return numeric, 0, nil
	}
	return 0, 0, fmt.Errorf("no %q in the image's %s", nameOrID, filepath.Base(file))
}
