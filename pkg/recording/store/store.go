// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package store keeps the recordings and request logs of sessions as
// objects under keys, in a local directory (Local) or an S3-compatible
// bucket. Objects are written whole and never appended to: a recording is a
// series of chunks, so that an object store can hold it as it grows.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound is returned by Get for a key that holds no object.
var ErrNotFound = errors.New("no such recording object")

// Object describes one stored object.
type Object struct {
	// Key is the object's name: segments separated by "/".
	Key string
	// Size is its length in bytes.
	Size int64
	// Modified is when it was last written.
	Modified time.Time
}

// Store holds objects by key.
type Store interface {
	// Put writes data under key, replacing what was there.
	Put(ctx context.Context, key string, data []byte) error
	// Get reads the object under key, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns the objects whose keys start with prefix, by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes the object under key; a missing one is no error.
	Delete(ctx context.Context, key string) error
}

// CheckKey refuses keys that could leave the store's root: empty
// segments, "." and "..", and a leading "/".
func CheckKey(key string) error {
	for _, segment := range strings.Split(key, "/") {
		if segment == "" || segment == "." || segment == ".." || strings.ContainsAny(segment, "\\\x00") {
			return fmt.Errorf("invalid recording key %q", key)
		}
	}
	return nil
}
