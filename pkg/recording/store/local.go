// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Local keeps objects as files under a directory; only the replica that
// wrote them can read them back.
type Local struct {
	root string
}

var _ Store = &Local{}

// NewLocal returns a store under dir, created (0700) when missing.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Local{root: dir}, nil
}

func (l *Local) path(key string) string { return filepath.Join(l.root, filepath.FromSlash(key)) }

// Put writes the object to a temporary file and renames it into place, so
// that a reader never sees half of it.
func (l *Local) Put(_ context.Context, key string, data []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	p := l.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if err := writeFile(f, data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// Get reads the object's file.
func (l *Local) Get(_ context.Context, key string) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(l.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	return data, err
}

// List walks the directory that holds prefix.
func (l *Local) List(_ context.Context, prefix string) ([]Object, error) {
	dir := l.root
	if i := strings.LastIndex(prefix, "/"); i > 0 {
		if err := CheckKey(prefix[:i]); err != nil {
			return nil, err
		}
		dir = l.path(prefix[:i])
	}
	var objects []Object
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".put-") {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // removed meanwhile: not listed.
		}
		objects = append(objects, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	sort.Slice(objects, func(i, j int) bool { return objects[i].Key < objects[j].Key })
	return objects, err
}

// Delete removes the object's file and the directories it leaves empty.
func (l *Local) Delete(_ context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := os.Remove(l.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for dir := filepath.Dir(l.path(key)); dir != l.root && strings.HasPrefix(dir, l.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil //nolint:nilerr // a directory that is not empty ends the walk, as it should
}
