// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/sessionevents/outbox"
)

// TestConfigurationChange: a new configuration takes effect at the next
// pass without losing what waits. A sink in backoff is tried at once (its
// URL may be what changed); a sink added gets the events stored from then
// on; events pending for a sink removed stay in the outbox and reach it
// when it comes back.
func TestConfigurationChange(t *testing.T) {
	ctx := context.Background()
	cfg := config(100, "siem")
	cfg.InitialBackoff.Duration, cfg.MaxBackoff.Duration = time.Minute, time.Hour
	f := newFixture(t, cfg, &memStore{entries: map[string]*outbox.Entry{}})
	siem := f.sinks[0]
	siem.down = true
	first := newSession("first", "1")
	f.record(t, first)
	if wait := f.c.deliver(ctx); wait != Resync {
		t.Fatalf("after a failure the next pass waits %s", wait)
	}

	steps := []struct {
		name  string
		sinks []string
		// up are the sinks that answer; record is a session recorded
		// after the change.
		up     []string
		record string
		want   map[string][]string
	}{
		{name: "siem fixed and chat added", sinks: []string{"siem", "chat"}, up: []string{"siem", "chat"}, record: "second",
			want: map[string][]string{"siem": {"u-1.requested.0", "u-second.requested.0"}, "chat": {"u-second.requested.0"}}},
		{name: "siem down again", sinks: []string{"siem", "chat"}, up: []string{"chat"}, record: "third",
			want: map[string][]string{"siem": {"u-1.requested.0", "u-second.requested.0"}, "chat": {"u-second.requested.0", "u-third.requested.0"}}},
		{name: "siem removed while third waits for it", sinks: []string{"chat"}, up: []string{"chat"}, record: "fourth",
			want: map[string][]string{"siem": {"u-1.requested.0", "u-second.requested.0"},
				"chat": {"u-second.requested.0", "u-third.requested.0", "u-fourth.requested.0"}}},
		{name: "siem back gets third", sinks: []string{"chat", "siem"}, up: []string{"chat", "siem"},
			want: map[string][]string{"siem": {"u-1.requested.0", "u-second.requested.0", "u-third.requested.0"},
				"chat": {"u-second.requested.0", "u-third.requested.0", "u-fourth.requested.0"}}},
	}
	for _, step := range steps {
		next := config(100, step.sinks...)
		next.InitialBackoff.Duration, next.MaxBackoff.Duration = time.Minute, time.Hour
		f.configure(next)
		for _, k := range f.sinks {
			k.down = !slices.Contains(step.up, k.name)
		}
		if step.record != "" {
			s := newSession(step.record, step.record)
			s.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
			f.record(t, s)
		}
		f.c.deliver(ctx)
		got := map[string][]string{}
		for _, k := range f.sinks {
			got[k.name] = k.got
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: delivered (-want +got):\n%s", step.name, diff)
		}
	}
	// Nothing waits any longer: fourth was stored while siem was not
	// configured, and is not for it.
	for id, e := range f.store.entries {
		if len(e.Pending) > 0 {
			t.Errorf("event %s still waits for %v", id, e.Pending)
		}
	}
}
