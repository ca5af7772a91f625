// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/gardener"
)

func TestSchedule(t *testing.T) {
	due := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		pace float64
		// dues are the due times of objects uid-0, uid-1, ... in the order
		// they are scheduled.
		dues []time.Time
		want []time.Time
	}{
		{name: "no pace: every rotation at its due time", pace: 0,
			dues: []time.Time{due, due, due}, want: []time.Time{due, due, due}},
		{name: "due together: one slot each, in the order they came, the last at the due time", pace: 5,
			dues: []time.Time{due, due, due, due},
			want: []time.Time{due.Add(-600 * time.Millisecond), due.Add(-400 * time.Millisecond), due.Add(-200 * time.Millisecond), due}},
		{name: "due apart by more than a slot: untouched", pace: 5,
			dues: []time.Time{due, due.Add(time.Second), due.Add(-time.Second)},
			want: []time.Time{due, due.Add(time.Second), due.Add(-time.Second)}},
		{name: "two due times in one slot: rounded down, the earlier one slot below", pace: 5,
			dues: []time.Time{due.Add(350 * time.Millisecond), due.Add(390 * time.Millisecond)},
			want: []time.Time{due, due.Add(200 * time.Millisecond)}},
		{name: "a later due time in a free slot: nothing moves for it", pace: 10,
			dues: []time.Time{due, due, due.Add(100 * time.Millisecond)},
			want: []time.Time{due.Add(-100 * time.Millisecond), due, due.Add(100 * time.Millisecond)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSchedule(tc.pace, 0)
			for i, d := range tc.dues {
				s.RotateAt(types.UID(fmt.Sprintf("uid-%d", i)), longBefore(d), d)
			}
			// Where each rotation starts once all are scheduled: a later
			// one may have moved earlier ones.
			for i, d := range tc.dues {
				if got := s.RotateAt(types.UID(fmt.Sprintf("uid-%d", i)), longBefore(d), d); !got.Equal(tc.want[i]) {
					t.Errorf("object %d due %s: rotates at %s, want %s", i, d.Format(time.StampMilli), got.Format(time.StampMilli), tc.want[i].Format(time.StampMilli))
				}
			}
		})
	}
}

func TestScheduleKeepsAndReleasesSlots(t *testing.T) {
	due := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := NewSchedule(1, 0)
	first := s.RotateAt("a", longBefore(due), due)
	if again := s.RotateAt("a", longBefore(due), due); !again.Equal(first) {
		t.Errorf("the same object and due time moved from %s to %s", first, again)
	}
	if b, a := s.RotateAt("b", longBefore(due), due), s.RotateAt("a", longBefore(due), due); !b.Equal(due) || !a.Equal(due.Add(-time.Second)) {
		t.Errorf("b rotates at %s and a at %s, want b at the due time and a one slot below", b, a)
	}
	// a rotated: its next due time frees its old slot for c.
	s.RotateAt("a", due, due.Add(time.Hour))
	if c := s.RotateAt("c", longBefore(due), due); !c.Equal(due) {
		t.Errorf("c rotates at %s, want the slot a gave up (%s)", c, due)
	}
	s.Forget("c")
	if d := s.RotateAt("d", longBefore(due), due); !d.Equal(due) {
		t.Errorf("d rotates at %s, want the slot of the forgotten c (%s)", d, due)
	}
}

// TestScheduleKeepsPace schedules 1000 rotations due within one second, as
// objects created together are, and checks that none is late and that no
// two share a slot at the pace.
func TestScheduleKeepsPace(t *testing.T) {
	due := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const pace, n = 5.0, 1000
	s := NewSchedule(pace, 0)
	for i := range n {
		d := due.Add(time.Duration(i) * time.Millisecond)
		s.RotateAt(types.UID(fmt.Sprint(i)), longBefore(d), d)
	}
	seen := map[time.Time]bool{}
	earliest := due
	for i := range n {
		d := due.Add(time.Duration(i) * time.Millisecond)
		at := s.RotateAt(types.UID(fmt.Sprint(i)), longBefore(d), d)
		if at.After(d) {
			t.Fatalf("object %d rotates at %s, after its due time %s", i, at, d)
		}
		if seen[at] {
			t.Fatalf("object %d shares the slot %s", i, at)
		}
		seen[at] = true
		earliest = minTime(earliest, at)
	}
	// 1000 rotations at 5/s take 200 s, no more.
	if spread := due.Sub(earliest); spread > time.Duration(n/pace)*time.Second {
		t.Errorf("the earliest rotation is %s early, want at most %s", spread, time.Duration(n/pace)*time.Second)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// TestScheduleLead: a rotation starts ahead of its slot by the longest of
// the last writes' durations, so that a slow Gardener still has it written
// by its due time; a slow answer is forgotten after latencySamples others.
func TestScheduleLead(t *testing.T) {
	due := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		pace     float64
		observed []time.Duration
		want     time.Time
	}{
		{name: "nothing written yet: at the slot", pace: 5, want: due},
		{name: "the longest write ahead", pace: 5, observed: []time.Duration{time.Second, 18 * time.Second, 2 * time.Second},
			want: due.Add(-18 * time.Second)},
		{name: "no pace: the due time less the lead", pace: 0, observed: []time.Duration{3 * time.Second}, want: due.Add(-3 * time.Second)},
		{name: "a slow write forgotten after latencySamples others", pace: 5,
			observed: append([]time.Duration{time.Minute}, slices.Repeat([]time.Duration{500 * time.Millisecond}, latencySamples)...),
			want:     due.Add(-500 * time.Millisecond)},
		{name: "a slow write remembered until then", pace: 5,
			observed: append([]time.Duration{time.Minute}, slices.Repeat([]time.Duration{500 * time.Millisecond}, latencySamples-1)...),
			want:     due.Add(-time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSchedule(tc.pace, 0)
			for _, d := range tc.observed {
				s.Observe(d)
			}
			if got := s.RotateAt("a", longBefore(due), due); !got.Equal(tc.want) {
				t.Errorf("rotates at %s, want %s", got.Format(time.StampMilli), tc.want.Format(time.StampMilli))
			}
		})
	}
	var none *Schedule
	none.Observe(time.Second)
	if got := none.RotateAt("a", longBefore(due), due); !got.Equal(due) {
		t.Errorf("no schedule: rotates at %s, want the due time", got)
	}
}

// TestScheduleRechecks: a start computed far ahead is looked at again
// recheck before it, and a lead that grew in the meantime starts the
// rotation earlier, by the lead of then.
func TestScheduleRechecks(t *testing.T) {
	due := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		schedule *Schedule
		now      time.Time
		want     time.Duration
	}{
		{name: "far ahead: wake recheck before the start", schedule: NewSchedule(5, 30*time.Second), now: due.Add(-6 * time.Minute), want: 5*time.Minute + 30*time.Second},
		{name: "within recheck: wake at the start", schedule: NewSchedule(5, 30*time.Second), now: due.Add(-20 * time.Second), want: 20 * time.Second},
		{name: "no recheck: wake at the start", schedule: NewSchedule(5, 0), now: due.Add(-6 * time.Minute), want: 6 * time.Minute},
		{name: "no schedule: wake at the start", now: due.Add(-6 * time.Minute), want: 6 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.schedule.Wait(due, tc.now); got != tc.want {
				t.Errorf("waits %s, want %s", got, tc.want)
			}
		})
	}

	// Six minutes ahead, writes take 3 s; at the recheck they take 16 s.
	s := NewSchedule(5, 30*time.Second)
	s.Observe(3 * time.Second)
	now := due.Add(-6 * time.Minute)
	first := s.RotateAt("a", longBefore(due), due)
	now = now.Add(s.Wait(first, now))
	s.Observe(16 * time.Second)
	again := s.RotateAt("a", longBefore(due), due)
	if !now.Before(again) || !again.Equal(due.Add(-16*time.Second)) {
		t.Errorf("at the recheck (%s) the rotation starts at %s, want %s, still ahead",
			now.Format(time.StampMilli), again.Format(time.StampMilli), due.Add(-16*time.Second).Format(time.StampMilli))
	}
}

// longBefore is a write time long enough before due that the halfway bound
// does not matter.
func longBefore(due time.Time) time.Time { return due.Add(-time.Hour) }

// TestScheduleNeverRotatesAtOnce: more rotations due together than the pace
// fits after halfway to their due time start no earlier than halfway, the
// rest get slots after the due time, each its own, and none starts before
// halfway, so that a kubeconfig just written is never rotated at once.
func TestScheduleNeverRotatesAtOnce(t *testing.T) {
	written := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	due := written.Add(6 * time.Minute)
	halfway := written.Add(3 * time.Minute)
	// 1 slot per second: 180 slots from halfway to due, 300 objects.
	s := NewSchedule(1, 0)
	for i := range 300 {
		s.RotateAt(types.UID(fmt.Sprint(i)), written, due)
	}
	seen := map[time.Time]bool{}
	late := 0
	for i := range 300 {
		at := s.RotateAt(types.UID(fmt.Sprint(i)), written, due)
		if at.Before(halfway) {
			t.Fatalf("object %d rotates at %s, before halfway %s", i, at.Format(time.TimeOnly), halfway.Format(time.TimeOnly))
		}
		if seen[at] {
			t.Fatalf("object %d shares the slot %s", i, at.Format(time.TimeOnly))
		}
		seen[at] = true
		if at.After(due) {
			late++
		}
	}
	if late != 300-181 {
		t.Errorf("%d rotations after their due time, want %d: the ones the 181 slots from halfway to due do not fit", late, 300-181)
	}
	// A long write time moves the start earlier, never before halfway.
	s.Observe(10 * time.Minute)
	if at := s.RotateAt("x", written, due); !at.Equal(halfway) {
		t.Errorf("with a 10-minute lead the rotation starts at %s, want halfway %s", at.Format(time.TimeOnly), halfway.Format(time.TimeOnly))
	}
}

// TestScheduleKeepsOrderUnderOverload: objects written faster than the
// pace, as Gardener writes the first kubeconfigs of objects created
// together, rotate in the order of their due times, none late, none earlier
// than the overload needs: rotations at a pace a little below the one the
// objects were written at.
func TestScheduleKeepsOrderUnderOverload(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const n, written, pace = 1000, 4.76, 4.0
	s := NewSchedule(pace, 0)
	dueOf := func(i int) (time.Time, time.Time) {
		w := start.Add(time.Duration(float64(i) / written * float64(time.Second)))
		return w, w.Add(6 * time.Minute)
	}
	for i := range n {
		w, due := dueOf(i)
		s.RotateAt(types.UID(fmt.Sprint(i)), w, due)
	}
	var previous time.Time
	var earliest time.Duration
	for i := range n {
		w, due := dueOf(i)
		at := s.RotateAt(types.UID(fmt.Sprint(i)), w, due)
		if at.After(due) {
			t.Fatalf("object %d rotates %s after its due time", i, at.Sub(due))
		}
		if !at.After(previous) {
			t.Fatalf("object %d rotates at %s, not after the one due before it (%s)", i, at.Format(time.StampMilli), previous.Format(time.StampMilli))
		}
		previous = at
		earliest = max(earliest, due.Sub(at))
	}
	// n(1/pace - 1/written) = 40 s, plus a slot of rounding.
	if want := 41 * time.Second; earliest > want {
		t.Errorf("the earliest rotation is %s before its due time, want at most %s", earliest, want)
	}
}

// TestPaced: rotations take rotationShare of the Gardener client's pace and
// are looked at again within its timeout, and no more Gardener requests are
// in flight than its burst, nor than the workers.
func TestPaced(t *testing.T) {
	tests := []struct {
		name         string
		workers      int
		gardener     gardener.Config
		wantInterval time.Duration
		wantWorkers  int
	}{
		{name: "burst below the workers caps them", workers: 20, gardener: gardener.Config{QPS: 5, Burst: 10, Timeout: 30 * time.Second},
			wantInterval: 250 * time.Millisecond, wantWorkers: 10},
		{name: "workers below the burst stay", workers: 4, gardener: gardener.Config{QPS: 5, Burst: 10, Timeout: 30 * time.Second},
			wantInterval: 250 * time.Millisecond, wantWorkers: 4},
		{name: "no burst: one request at a time", workers: 4, gardener: gardener.Config{QPS: 5, Timeout: 30 * time.Second},
			wantInterval: 250 * time.Millisecond, wantWorkers: 1},
		{name: "no pace: rotations at their due time", workers: 4, gardener: gardener.Config{Burst: 10},
			wantWorkers: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Options{Workers: tc.workers}.Paced(tc.gardener)
			if got.Schedule.interval != tc.wantInterval || got.Schedule.recheck != tc.gardener.Timeout {
				t.Errorf("schedule every %s, rechecked %s ahead; want every %s, %s ahead",
					got.Schedule.interval, got.Schedule.recheck, tc.wantInterval, tc.gardener.Timeout)
			}
			if got.GardenerWorkers != tc.wantWorkers || got.Workers != tc.workers {
				t.Errorf("%d Gardener workers of %d, want %d of %d", got.GardenerWorkers, got.Workers, tc.wantWorkers, tc.workers)
			}
		})
	}
}
