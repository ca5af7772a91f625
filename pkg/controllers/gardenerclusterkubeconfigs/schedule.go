// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/gardener"
)

// Schedule spreads rotations at the pace Gardener is asked to serve them,
// and starts each early enough to be written by its due time.
//
// Kubeconfigs written together fall due together, faster than Gardener
// serves them; queueing them at the due moment makes the last of them late.
// Instead every rotation holds a slot of its own, one per 1/pace, the latest
// free one at or before its due time: a rotation moves earlier only by as
// many slots as others due at the same time took.
//
// A rotation started at its slot is still written only when Gardener has
// answered, which takes from a fraction of a second to tens of seconds on a
// busy Gardener. So each starts ahead of its slot by the longest of the last
// latencySamples writes' durations (Observe), the lead. A write's duration
// counts from its request, not from when it was queued: the queue's wait
// behind a burst of new objects would make the lead minutes long and start
// every rotation at once.
//
// The lead is the one of the moment a rotation's start is computed, and
// Gardener may have slowed since. So the pass that computes a start a long
// way off looks again recheck before it (Wait), and starts the rotation by
// the lead of then.
type Schedule struct {
	interval time.Duration
	recheck  time.Duration

	mu sync.Mutex
	// latencies are the durations of the last writes, a ring; next is
	// where the next one goes.
	latencies [latencySamples]time.Duration
	next      int
	// slots maps a slot (time / interval) to the object holding it.
	slots map[int64]types.UID
	// held maps an object to its slot and the due time it was taken for.
	held map[types.UID]heldSlot
}

type heldSlot struct {
	due  time.Time
	slot int64
	// first is the earliest slot the object may move to: halfway to due.
	first int64
}

// latencySamples is how many of the last writes the lead is taken from:
// enough to outlast a single fast answer in a slow spell, few enough to
// forget one slow answer within a minute at a few writes per second.
const latencySamples = 32

// rotationShare is the share of Gardener's pace that scheduled rotations
// take. The rest is for new objects, repairs and forced rotations, as a pace
// at Gardener's limit queues at any jitter. It stays well above half:
// objects created together are written at Gardener's full pace, and their
// rotations, due together, must fit between halfway to their due time and
// their due time.
const rotationShare = 0.8

// Paced returns o with rotations spread at rotationShare of the pace of the
// Gardener client g, looked at again within its request timeout, and no
// more requests to Gardener in flight than its burst: more would make a
// busy Gardener no faster, only each answer later, past the client's
// timeout and into a second request.
func (o Options) Paced(g gardener.Config) Options {
	o.Schedule = NewSchedule(rotationShare*float64(g.QPS), g.Timeout)
	o.GardenerWorkers = min(o.Workers, max(1, g.Burst))
	return o
}

// NewSchedule returns a schedule with pace slots per second; a pace of zero
// or less leaves every rotation at its due time, less the lead. Starts
// further off than recheck are looked at again recheck before them; the
// longest a write can take (Gardener's request timeout) is the right
// recheck.
func NewSchedule(pace float64, recheck time.Duration) *Schedule {
	s := &Schedule{slots: map[int64]types.UID{}, held: map[types.UID]heldSlot{}, recheck: recheck}
	if pace > 0 {
		s.interval = time.Duration(float64(time.Second) / pace)
	}
	return s
}

// Observe records how long a write took, from its start to the Secret
// written: Gardener's answer, its client's rate limit and the write.
func (s *Schedule) Observe(took time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies[s.next] = took
	s.next = (s.next + 1) % latencySamples
}

// RotateAt returns when the rotation of the object's kubeconfig, written at
// written and due at due, starts: its slot less the lead, and never before
// halfway from written to due. The same object and due time keep their
// slot; a new due time (after a rotation) gives up the old slot.
//
// The halfway bound keeps a kubeconfig just written from being rotated at
// once: when more rotations fall due together than the pace fits before
// their due time, the slots would reach into the past, and the objects
// whose slots were there would rotate again and again. What does not fit
// between the bound and the due time gets the first free slot after it:
// late, but at the pace.
func (s *Schedule) RotateAt(uid types.UID, written, due time.Time) time.Time {
	if s == nil {
		return due
	}
	earliest := written.Add(due.Sub(written) / 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.slot(uid, due, earliest).Add(-slices.Max(s.latencies[:]))
	if at.Before(earliest) {
		return earliest
	}
	return at
}

// Wait returns how long until the pass that starts a rotation at rotateAt,
// or, when that is further off than recheck, until the pass recheck before
// it, which computes the start again with the lead of then.
func (s *Schedule) Wait(rotateAt, now time.Time) time.Duration {
	wait := rotateAt.Sub(now)
	if s != nil && wait > s.recheck {
		return wait - s.recheck
	}
	return wait
}

// slot returns the time of the object's slot; due itself without a pace.
//
// Rotations keep the order of their due times: when the slot of the due
// time is taken, the run of taken slots that ends there moves one slot
// earlier and the object takes the freed one. Taking the latest free slot
// before the run instead would make the last of many objects due together
// the earliest, pushed beyond halfway and so late; in order, none moves
// more than the overload needs. When the run cannot move (one of it would
// go before halfway), the object takes the latest free slot from halfway to
// due, or else the first free one after due: late, but at the pace.
func (s *Schedule) slot(uid types.UID, due, earliest time.Time) time.Time {
	if s.interval <= 0 {
		return due
	}
	if h, ok := s.held[uid]; ok {
		if h.due.Equal(due) {
			return s.at(h.slot)
		}
		delete(s.slots, h.slot)
	}
	last := due.UnixNano() / int64(s.interval)
	first := (earliest.UnixNano() + int64(s.interval) - 1) / int64(s.interval)
	slot := last
	if !s.free(slot) && !s.shiftRunEndingAt(slot) {
		for ; slot >= first && !s.free(slot); slot-- {
		}
		if slot < first {
			for slot = last + 1; !s.free(slot); slot++ {
			}
		}
	}
	s.slots[slot] = uid
	s.held[uid] = heldSlot{due: due, slot: slot, first: first}
	return s.at(slot)
}

func (s *Schedule) free(slot int64) bool {
	_, taken := s.slots[slot]
	return !taken
}

// shiftRunEndingAt moves the run of taken slots that ends at last one slot
// earlier, freeing last, unless one of the run would go before its first
// allowed slot.
func (s *Schedule) shiftRunEndingAt(last int64) bool {
	start := last
	for !s.free(start - 1) {
		start--
	}
	for slot := start; slot <= last; slot++ {
		if slot-1 < s.held[s.slots[slot]].first {
			return false
		}
	}
	for slot := start; slot <= last; slot++ {
		uid := s.slots[slot]
		h := s.held[uid]
		h.slot = slot - 1
		s.held[uid] = h
		s.slots[slot-1] = uid
	}
	delete(s.slots, last)
	return true
}

// Forget gives up the slot of an object that is gone.
func (s *Schedule) Forget(uid types.UID) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.held[uid]; ok {
		delete(s.slots, h.slot)
		delete(s.held, uid)
	}
}

func (s *Schedule) at(slot int64) time.Time {
	return time.Unix(0, slot*int64(s.interval))
}
