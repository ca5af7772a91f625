// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents"
	"github.com/clustergate/clustergate/pkg/sessionevents/outbox"
)

// flakyStore fails its first failures Adds, as an etcd that is away.
type flakyStore struct {
	*memStore
	failures int
}

func (s *flakyStore) Add(ctx context.Context, e sessionevents.Event, pending []string) (bool, error) {
	if s.failures > 0 {
		s.failures--
		return false, errors.New("etcdserver: request timed out")
	}
	return s.memStore.Add(ctx, e, pending)
}

// TestFailures: a replica stores the event of each failed recording once,
// with its session's data from the cache or, once the session is gone,
// from the recording, for the sinks that want it; an outbox that fails is
// tried again.
func TestFailures(t *testing.T) {
	info := v1alpha1.RecordingInfo{Stream: "s1", Replica: "r2", Way: "data-plane",
		RecordedSession: v1alpha1.RecordedSession{Namespace: "shop", Name: "fix", UID: "u-1", Owner: "alice"}}
	tests := []struct {
		name       string
		cached     bool
		etcdFails  int
		reports    int
		sinks      []string
		wantTarget string
		wantSinks  []string
	}{
		{name: "session cached", cached: true, reports: 1, sinks: []string{"siem"}, wantTarget: "prod", wantSinks: []string{"siem"}},
		{name: "session gone", reports: 1, sinks: []string{"siem"}, wantSinks: []string{"siem"}},
		{name: "reported twice, stored once", cached: true, reports: 2, sinks: []string{"siem"}, wantTarget: "prod", wantSinks: []string{"siem"}},
		{name: "the outbox fails twice", cached: true, etcdFails: 2, reports: 1, sinks: []string{"siem", "chat"}, wantTarget: "prod", wantSinks: []string{"siem", "chat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &flakyStore{memStore: &memStore{entries: map[string]*outbox.Entry{}}, failures: tt.etcdFails}
			sessions := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tt.cached {
				if err := sessions.Add(newSession("fix", "1")); err != nil {
					t.Fatal(err)
				}
			}
			cfg := &testSinks{}
			cfg.set(config(100, tt.sinks...), nil)
			f := NewFailures(store, cfg, listers.NewSessionLister(sessions), clock.RealClock{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range tt.reports {
				f.RecordingFailed(sessionevents.RecordingFailure{Info: info, Outcome: sessionevents.StreamEnded, At: t0})
				f.storeFailure(ctx, <-f.queue)
			}
			if len(store.entries) != 1 {
				t.Fatalf("stored %d events", len(store.entries))
			}
			e := store.entries["u-1.recording_failed.s1"]
			if e == nil || e.Event.Data.Recording == nil || e.Event.Data.Target.Name != tt.wantTarget || e.Event.Data.Owner != "alice" {
				t.Fatalf("stored %+v", store.entries)
			}
			if diff := cmp.Diff(tt.wantSinks, e.Pending); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailuresNeverBlock: past FailureQueue, failures are dropped, not
// waited for.
func TestFailuresNeverBlock(t *testing.T) {
	cfg := &testSinks{}
	cfg.set(config(100, "siem"), nil)
	f := NewFailures(&memStore{entries: map[string]*outbox.Entry{}}, cfg, listers.NewSessionLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), clock.RealClock{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range FailureQueue + 10 {
			f.RecordingFailed(sessionevents.RecordingFailure{})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RecordingFailed blocked on a full queue")
	}
	if len(f.queue) != FailureQueue {
		t.Errorf("queued %d", len(f.queue))
	}
}
