// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clustergate/clustergate/pkg/registry/registrytest"
	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// TestOutbox stores events in a real etcd: an id is written once, sinks
// are marked done one by one, and a second outbox on the same etcd (the
// next leader) reads what the first left.
func TestOutbox(t *testing.T) {
	ctx := context.Background()
	opts := registrytest.NewRESTOptions(t, registrytest.Scheme(), Resource.Resource)
	first, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	e := sessionevents.Event{ID: "u1.requested.0", Type: sessionevents.Requested, Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Data: sessionevents.Data{Session: sessionevents.SessionRef{Namespace: "shop", Name: "fix", UID: "u1"}, Owner: "alice"}}
	for i, want := range []bool{true, false} {
		added, err := first.Add(ctx, e, []string{"siem", "chat"})
		if err != nil || added != want {
			t.Fatalf("add #%d: added %v, %v; want %v", i+1, added, err, want)
		}
	}
	if err := first.Done(ctx, e.ID, "chat"); err != nil {
		t.Fatal(err)
	}
	if err := first.Done(ctx, "gone", "chat"); err != nil {
		t.Errorf("done on an event no longer stored: %v", err)
	}

	second, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	got, err := second.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !cmp.Equal(got[0].Pending, []string{"siem"}) || !cmp.Equal(got[0].Event, e) {
		t.Fatalf("listed %+v", got)
	}
	if err := second.Done(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := second.List(ctx); len(got) != 1 || len(got[0].Pending) != 0 {
		t.Errorf("after done by every sink: %+v", got)
	}
	if err := second.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := second.List(ctx); len(got) != 0 {
		t.Errorf("after delete: %+v", got)
	}
}
