// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllerutil

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestQueue(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	tests := []struct {
		name    string
		results []Result
		errs    []error
		// step advances the fake clock before the pass that follows.
		step time.Duration
	}{
		{name: "again: the next pass follows at once", results: []Result{{Again: true}, {}}},
		{name: "an error retries with backoff", results: []Result{{}, {}}, errs: []error{errors.New("boom"), nil}, step: time.Second},
		{name: "requeue after a delay", results: []Result{{RequeueAfter: time.Minute}, {}}, step: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			var mu sync.Mutex
			passes := 0
			done := make(chan struct{})
			q := NewQueue("test", clk, time.Second, time.Minute, func(context.Context, types.NamespacedName) (Result, error) {
				mu.Lock()
				defer mu.Unlock()
				i := passes
				passes++
				if i == len(tt.results)-1 {
					close(done)
				}
				var err error
				if i < len(tt.errs) {
					err = tt.errs[i]
				}
				return tt.results[min(i, len(tt.results)-1)], err
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go q.Run(ctx, 1)
			q.Add(key)
			deadline := time.After(10 * time.Second)
			for {
				select {
				case <-done:
					return
				case <-deadline:
					t.Fatalf("%d passes, want %d", passes, len(tt.results))
				case <-time.After(50 * time.Millisecond):
					clk.Step(tt.step)
				}
			}
		})
	}
}

func TestEventHandlerUnwrapsTombstones(t *testing.T) {
	got := make(chan types.NamespacedName, 1)
	q := NewQueue("test", clocktesting.NewFakeClock(time.Now()), time.Second, time.Minute, nil)
	h := q.EventHandler(func(obj any) (types.NamespacedName, bool) {
		s, ok := obj.(string)
		return types.NamespacedName{Name: s}, ok
	})
	h.OnDelete(cacheTombstone("gone"))
	key, _ := q.queue.Get()
	got <- key
	if k := <-got; k.Name != "gone" {
		t.Errorf("key %v, want gone", k)
	}
}

func cacheTombstone(obj any) any { return cache.DeletedFinalStateUnknown{Key: "x", Obj: obj} }
