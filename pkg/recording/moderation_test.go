// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestModeratorsObserve: a moderator is present while their mark changed
// within moderatorTTL by the relaying replica's clock, whatever the mark's
// own time says; each presence is one period.
func TestModeratorsObserve(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	skewed := t0.Add(-time.Hour) // the follower's replica's clock is off
	mark := func(user string, at time.Duration) moderatorMark {
		return moderatorMark{User: user, Time: skewed.Add(at)}
	}
	steps := []struct {
		at      time.Duration
		marks   []moderatorMark
		present []string
	}{
		{at: 0, present: nil},
		{at: time.Second, marks: []moderatorMark{mark("carol", 0)}, present: []string{"carol"}},
		{at: 3 * time.Second, marks: []moderatorMark{mark("carol", 2*time.Second), mark("dave", 0)}, present: []string{"carol", "dave"}},
		// carol's follow was cut and asked for again: her mark is gone for
		// a while, she still counts.
		{at: 5 * time.Second, marks: []moderatorMark{mark("dave", 2*time.Second)}, present: []string{"carol", "dave"}},
		{at: 6 * time.Second, marks: []moderatorMark{mark("carol", 6*time.Second), mark("dave", 2*time.Second)}, present: []string{"carol", "dave"}},
		// dave's mark stopped changing moderatorTTL ago: he left.
		{at: 5*time.Second + moderatorTTL, marks: []moderatorMark{mark("carol", 12*time.Second), mark("dave", 2*time.Second)}, present: []string{"carol"}},
		{at: 5*time.Second + 2*moderatorTTL, marks: []moderatorMark{mark("carol", 12*time.Second)}, present: nil},
		// carol comes back: a new period.
		{at: 30 * time.Second, marks: []moderatorMark{mark("carol", 30*time.Second)}, present: []string{"carol"}},
	}
	m := &moderators{seen: map[string]markSeen{}, open: map[string]int{}}
	for _, s := range steps {
		if got := m.observe(t0.Add(s.at), s.marks); !slices.Equal(got, s.present) {
			t.Fatalf("at %s: present %v, want %v", s.at, got, s.present)
		}
	}
	m.close(t0.Add(40 * time.Second))
	want := []v1alpha1.RecordingModerator{
		{User: "carol", From: t0.Add(time.Second), To: t0.Add(5*time.Second + moderatorTTL)},
		{User: "dave", From: t0.Add(3 * time.Second), To: t0.Add(6 * time.Second)},
		{User: "carol", From: t0.Add(30 * time.Second), To: t0.Add(40 * time.Second)},
	}
	if diff := cmp.Diff(want, m.periods); diff != "" {
		t.Errorf("periods (-want +got):\n%s", diff)
	}
}
