// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// sweepInterval is how often recordings past retention are looked for.
const sweepInterval = time.Hour

// sweep deletes the recordings and request logs of sessions whose newest
// object is older than the retention: a session's objects go together.
// It deletes only what the recorder writes, by its layout (ownSession),
// and leaves anything else under the store's root alone, so that a
// recording directory shared with other data, or a bucket without a
// prefix, loses nothing that is not a recording.
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
	own := objects[:0]
	for _, o := range objects {
		session, ok := ownSession(o.Key)
		if !ok {
			continue
		}
		own = append(own, o)
		if o.Modified.After(newest[session]) {
			newest[session] = o.Modified
		}
	}
	cutoff := r.cfg.Clock.Now().Add(-r.cfg.Retention)
	deleted := 0
	for _, o := range own {
		session, _ := ownSession(o.Key)
		if newest[session].Before(cutoff) {
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

// The names the recorder gives its objects (see the package's doc, and
// newStreamID, chunkKey and flushRequests).
var (
	streamIDPattern  = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-([A-Za-z0-9.-]+-)?[0-9a-f]{8}$`)
	streamObjPattern = regexp.MustCompile(`^(` + regexp.QuoteMeta(infoObject) + `|` + regexp.QuoteMeta(liveObject) + `|` + regexp.QuoteMeta(manifestObject) + `|` + chunkPrefix + `[0-9]{6,}|` +
		moderationPrefix + `([0-9a-f]{16}|end)\.json)$`)
	requestLogPattern = regexp.MustCompile(`^[A-Za-z0-9.-]*-[0-9]+-[0-9]{8,}\.jsonl$`)
	uidPattern        = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)
)

// ownSession returns the <namespace>/<name>/<uid> of a key the recorder
// writes: <namespace>/<name>/<uid>/streams/<id>/(info.json|live.json|
// manifest.json|capture-NNNNNN) or <namespace>/<name>/<uid>/requests/
// <replica>-<boot>-<seq>.jsonl, with a namespace and a name Kubernetes
// allows; ok is false for any other key.
func ownSession(key string) (session string, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) < 5 || len(validation.IsDNS1123Label(parts[0])) > 0 || len(validation.IsDNS1123Subdomain(parts[1])) > 0 ||
		!uidPattern.MatchString(parts[2]) {
		return "", false
	}
	switch {
	case len(parts) == 6 && parts[3] == streamsDir && streamIDPattern.MatchString(parts[4]) && streamObjPattern.MatchString(parts[5]):
	case len(parts) == 5 && parts[3] == requestsDir && requestLogPattern.MatchString(parts[4]):
	default:
		return "", false
	}
	return strings.Join(parts[:3], "/"), true
}
