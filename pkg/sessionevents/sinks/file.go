// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sinks

import (
	"context"
	"crypto/sha256"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// ReloadInterval is how often File.Run reads the files again.
const ReloadInterval = 10 * time.Second

// Loaded is a configuration that loaded, with a sender per sink.
type Loaded struct {
	Config  *Configuration
	Senders []*Sender
}

// File is the configuration of --session-event-sinks-config, read again
// when it changes, as kube-apiserver reloads its dynamic configuration
// files: Run compares, every ReloadInterval, the contents of the file and
// of the CA and secret files it names with what was loaded (content, not
// modification times, so that a ConfigMap's or Secret's volume, which
// swaps a symlink, counts as the change it is). A new configuration that
// loads replaces the old one whole; one that does not (unreadable, invalid,
// a CA without certificate) leaves the old one in effect, and is logged
// and counted (clustergate_session_event_sinks_config_reloads_total and
// _last_reload_successful) until it is fixed. The events stored stay in the
// outbox either way: a reload changes where they go, not what is kept.
type File struct {
	path string

	mu      sync.Mutex
	current *Loaded
	// digest is of the files current was loaded from; failed is of the
	// last contents that did not load, logged once.
	digest, failed [sha256.Size]byte
	// changed is closed, and replaced, when current changes.
	changed chan struct{}
}

// Open loads the configuration in path and the sinks' CAs and secrets: an
// error stops the server's start.
func Open(path string) (*File, error) {
	f := &File{path: path, changed: make(chan struct{})}
	loaded, digest, err := f.load()
	if err != nil {
		return nil, err
	}
	f.current, f.digest = loaded, digest
	reloadSucceeded.Set(1)
	return f, nil
}

// Current is the configuration in effect.
func (f *File) Current() *Loaded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current
}

// Changed is closed when the configuration in effect changes.
func (f *File) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Run reloads the configuration when its files change, until ctx ends.
func (f *File) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, f.Reload, interval)
}

// Reload reads the files and, when they changed, loads them.
func (f *File) Reload(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("file", f.path)
	digest, err := f.digestOf(f.Current().Config)
	f.mu.Lock()
	if err == nil && digest == f.digest {
		// Unchanged, or back to what is in effect after a change that
		// did not load.
		if f.failed != ([sha256.Size]byte{}) {
			f.failed = [sha256.Size]byte{}
			reloadSucceeded.Set(1)
			logger.Info("Session event sinks configuration files are back to the configuration in effect")
		}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	loaded, digest, err := f.load()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		reloadSucceeded.Set(0)
		if digest != f.failed {
			f.failed = digest
			reloads.WithLabelValues("failure").Inc()
			logger.Error(err, "Session event sinks configuration not reloaded; the previous one stays in effect")
		}
		return
	}
	f.current, f.digest, f.failed = loaded, digest, [sha256.Size]byte{}
	reloads.WithLabelValues("success").Inc()
	reloadSucceeded.Set(1)
	close(f.changed)
	f.changed = make(chan struct{})
	logger.Info("Session event sinks configuration reloaded", "sinks", len(loaded.Config.Sinks))
}

// load reads the configuration and its sinks' files; the digest is of the
// files read, also when they do not load.
func (f *File) load() (*Loaded, [sha256.Size]byte, error) {
	cfg, err := Load(f.path)
	if err != nil {
		digest, _ := f.digestOf(nil)
		return nil, digest, err
	}
	digest, err := f.digestOf(cfg)
	if err != nil {
		return nil, digest, err
	}
	loaded := &Loaded{Config: cfg}
	for _, s := range cfg.Sinks {
		sender, err := NewSender(s, cfg.Source)
		if err != nil {
			return nil, digest, err
		}
		loaded.Senders = append(loaded.Senders, sender)
	}
	return loaded, digest, nil
}

// digestOf is the digest of the configuration file and of the CA and
// secret files cfg names (none for a nil cfg).
func (f *File) digestOf(cfg *Configuration) ([sha256.Size]byte, error) {
	files := []string{f.path}
	if cfg != nil {
		for _, s := range cfg.Sinks {
			files = append(files, s.CAFile, s.HMACSecretFile)
		}
	}
	h := sha256.New()
	var firstErr error
	for _, name := range files {
		if name == "" {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(data)
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out, firstErr
}
