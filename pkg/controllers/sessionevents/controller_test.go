// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents"
	"github.com/clustergate/clustergate/pkg/sessionevents/outbox"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
)

// memStore is an outbox in memory, with etcd's create-once semantics.
type memStore struct {
	mu      sync.Mutex
	entries map[string]*outbox.Entry
}

func (m *memStore) Add(_ context.Context, e sessionevents.Event, pending []string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries[e.ID] != nil {
		return false, nil
	}
	m.entries[e.ID] = &outbox.Entry{ObjectMeta: metav1.ObjectMeta{Name: e.ID}, Event: e, Pending: slices.Clone(pending)}
	return true, nil
}

func (m *memStore) List(context.Context) ([]outbox.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []outbox.Entry
	for _, e := range m.entries {
		out = append(out, *e.DeepCopyObject().(*outbox.Entry))
	}
	return out, nil
}

func (m *memStore) Done(_ context.Context, id string, sinks ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[id]; e != nil {
		e.Pending = slices.DeleteFunc(e.Pending, func(s string) bool { return len(sinks) == 0 || slices.Contains(sinks, s) })
	}
	return nil
}

func (m *memStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, id)
	return nil
}

// sink records what it got, and fails while down.
type sink struct {
	name string
	mu   sync.Mutex
	down bool
	got  []string
	// tries are the times of every attempt.
	tries []time.Time
	clock *clocktesting.FakeClock
}

func (s *sink) Name() string { return s.name }

func (s *sink) Send(_ context.Context, e sessionevents.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries = append(s.tries, s.clock.Now())
	if s.down {
		return errors.New("connection refused")
	}
	s.got = append(s.got, e.ID)
	return nil
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func newSession(name string, uid string) *v1alpha1.Session {
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: k8stypes.UID("u-" + uid), CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, Owner: v1alpha1.SessionOwner{Username: "alice"},
			AccessLevel: v1alpha1.AccessLevel{Group: "viewer"}, Target: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "prod"}}},
		Status: v1alpha1.SessionStatus{ExpiresAt: &metav1.Time{Time: t0.Add(time.Hour)}},
	}
}

func config(maxPending int, names ...string) *sinks.Configuration {
	c := &sinks.Configuration{MaxPending: maxPending}
	for _, n := range names {
		c.Sinks = append(c.Sinks, sinks.Sink{Name: n, URL: "https://" + n})
	}
	c.Default()
	return c
}

// testSinks are sinks whose configuration a test changes.
type testSinks struct {
	mu      sync.Mutex
	cfg     *sinks.Configuration
	senders []Sender
	changed chan struct{}
}

func (s *testSinks) Current() (*sinks.Configuration, []Sender) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg, s.senders
}

func (s *testSinks) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// set puts cfg in effect, with senders.
func (s *testSinks) set(cfg *sinks.Configuration, senders []Sender) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.senders = cfg, senders
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

type fixture struct {
	c        *Controller
	config   *testSinks
	store    *memStore
	sinks    []*sink
	clock    *clocktesting.FakeClock
	sessions cache.Indexer
}

func newFixture(t *testing.T, cfg *sinks.Configuration, store *memStore) *fixture {
	t.Helper()
	f := &fixture{store: store, clock: clocktesting.NewFakeClock(t0), sessions: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	f.config = &testSinks{}
	f.configure(cfg)
	f.c = New(f.config, store, listers.NewSessionLister(f.sessions), 10*time.Minute, f.clock)
	return f
}

// configure puts cfg in effect, with a sink each: those of the same name
// as before stay.
func (f *fixture) configure(cfg *sinks.Configuration) {
	var senders []Sender
	for _, s := range cfg.Sinks {
		i := slices.IndexFunc(f.sinks, func(k *sink) bool { return k.name == s.Name })
		if i < 0 {
			f.sinks = append(f.sinks, &sink{name: s.Name, clock: f.clock})
			i = len(f.sinks) - 1
		}
		senders = append(senders, f.sinks[i])
	}
	f.config.set(cfg, senders)
}

func (f *fixture) record(t *testing.T, s *v1alpha1.Session) {
	t.Helper()
	if err := f.sessions.Add(s); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Record(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestRetry: a sink that is down is tried again after a backoff that
// doubles up to its bound, while another sink gets everything at once;
// once it is back, it gets every event in order, each once.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	cfg := config(100, "siem", "chat")
	cfg.InitialBackoff.Duration, cfg.MaxBackoff.Duration = time.Second, 4*time.Second
	f := newFixture(t, cfg, &memStore{entries: map[string]*outbox.Entry{}})
	siem, chat := f.sinks[0], f.sinks[1]
	siem.down = true
	s := newSession("fix", "1")
	f.record(t, s)
	ready := s.DeepCopy()
	ready.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "SessionReady", LastTransitionTime: metav1.NewTime(t0.Add(time.Second))}}
	f.record(t, ready)

	var waits []time.Duration
	for range 6 {
		wait := f.c.deliver(ctx)
		waits = append(waits, wait)
		f.clock.Step(wait)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}, waits); diff != "" {
		t.Errorf("waits between passes (-want +got):\n%s", diff)
	}
	want := []string{"u-1.requested.0", "u-1.opened"}
	if diff := cmp.Diff(want, chat.got); diff != "" {
		t.Errorf("chat got (-want +got):\n%s", diff)
	}
	if len(siem.tries) != 6 || len(siem.got) != 0 {
		t.Errorf("siem tried %d times and got %v while down", len(siem.tries), siem.got)
	}
	siem.down = false
	if wait := f.c.deliver(ctx); wait != Resync {
		t.Errorf("after delivery the next pass waits %s, want %s", wait, Resync)
	}
	f.c.deliver(ctx)
	if diff := cmp.Diff(want, siem.got); diff != "" {
		t.Errorf("siem got (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, chat.got); diff != "" {
		t.Errorf("chat got more (-want +got):\n%s", diff)
	}
}

// TestRestart: a new leader on the same outbox stores nothing new for what
// the first stored, and delivers what the first left pending; delivered
// events go once their session is gone.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	store := &memStore{entries: map[string]*outbox.Entry{}}
	first := newFixture(t, config(100, "siem"), store)
	first.sinks[0].down = true
	s := newSession("fix", "1")
	first.record(t, s)
	first.c.deliver(ctx)

	second := newFixture(t, config(100, "siem"), store)
	second.record(t, s)
	deleted := s.DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
	second.record(t, deleted)
	second.c.deliver(ctx)
	if diff := cmp.Diff([]string{"u-1.requested.0", "u-1.revoked", "u-1.ended"}, second.sinks[0].got); diff != "" {
		t.Errorf("the second leader delivered (-want +got):\n%s", diff)
	}
	if err := second.sessions.Delete(deleted); err != nil {
		t.Fatal(err)
	}
	second.c.deliver(ctx)
	if len(store.entries) != 0 {
		t.Errorf("delivered events of a session that is gone stay: %v", store.entries)
	}
}

// TestBound: past maxPending the oldest pending events are dropped.
func TestBound(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, config(2, "siem"), &memStore{entries: map[string]*outbox.Entry{}})
	f.sinks[0].down = true
	for i, name := range []string{"a", "b", "c"} {
		s := newSession(name, name)
		s.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		f.record(t, s)
	}
	f.c.deliver(ctx)
	f.sinks[0].down = false
	f.clock.Step(time.Hour)
	f.c.deliver(ctx)
	if diff := cmp.Diff([]string{"u-b.requested.0", "u-c.requested.0"}, f.sinks[0].got); diff != "" {
		t.Errorf("delivered after the bound (-want +got):\n%s", diff)
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 1000: 5 * time.Minute} {
		if got := Backoff(failures, time.Second, 5*time.Minute); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}
