// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// sweepInterval is how often recordings past retention are looked for.
const sweepInterval = time.Hour

// sweep deletes the recordings and request logs of sessions whose newest
// object is older than the retention: a session's objects go together.
func (r *Recorder) sweep(ctx context.Context) {
	if r.cfg.Retention <= 0 {
		return
	}
	objects, err := r.cfg.Store.List(ctx, "")
	if err != nil {
		klog.ErrorS(err, "Recordings past retention not looked for")
		return
	}
	newest := map[string]time.Time{}
	for _, o := range objects {
		session := sessionOf(o.Key)
		if o.Modified.After(newest[session]) {
			newest[session] = o.Modified
		}
	}
	cutoff := r.cfg.Clock.Now().Add(-r.cfg.Retention)
	deleted := 0
	for _, o := range objects {
		if newest[sessionOf(o.Key)].Before(cutoff) {
			if err := r.cfg.Store.Delete(ctx, o.Key); err != nil {
				klog.ErrorS(err, "Recording past retention not deleted", "key", o.Key)
				continue
			}
			deleted++
		}
	}
	if deleted > 0 {
		klog.InfoS("Deleted recordings past retention", "objects", deleted, "retention", r.cfg.Retention)
	}
}

// sessionOf is the <namespace>/<name>/<uid> a key belongs to.
func sessionOf(key string) string {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) < 4 {
		return key
	}
	return strings.Join(parts[:3], "/")
}
