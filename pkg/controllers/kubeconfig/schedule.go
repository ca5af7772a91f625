package kubeconfig

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Schedule spreads rotations at the pace Gardener is asked to serve them.
// Kubeconfigs written together fall due together, faster than Gardener
// serves them; queueing them at the due moment makes the last of them late.
// Instead every rotation holds a slot of its own, one per 1/pace, the latest
// free one at or before its due time: nothing is late while Gardener keeps
// the pace, and a rotation moves earlier only by as many slots as others
// due at the same time took.
type Schedule struct {
	interval time.Duration

	mu sync.Mutex
	// slots maps a slot (time / interval) to the object holding it.
	slots map[int64]types.UID
	// held maps an object to its slot and the due time it was taken for.
	held map[types.UID]heldSlot
}

type heldSlot struct {
	due  time.Time
	slot int64
}

// NewSchedule returns a schedule with pace slots per second; a pace of zero
// or less schedules every rotation at its due time.
func NewSchedule(pace float64) *Schedule {
	s := &Schedule{slots: map[int64]types.UID{}, held: map[types.UID]heldSlot{}}
	if pace > 0 {
		s.interval = time.Duration(float64(time.Second) / pace)
	}
	return s
}

// RotateAt returns when the object's rotation, due at due, takes place. The
// same object and due time get the same answer; a new due time (after a
// rotation) gives up the old slot.
func (s *Schedule) RotateAt(uid types.UID, due time.Time) time.Time {
	if s == nil || s.interval <= 0 {
		return due
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.held[uid]; ok {
		if h.due.Equal(due) {
			return s.at(h.slot)
		}
		delete(s.slots, h.slot)
	}
	slot := due.UnixNano() / int64(s.interval)
	for {
		if _, taken := s.slots[slot]; !taken {
			break
		}
		slot--
	}
	s.slots[slot] = uid
	s.held[uid] = heldSlot{due: due, slot: slot}
	return s.at(slot)
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
