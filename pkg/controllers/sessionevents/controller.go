// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sessionevents runs the leader's side of session events: Record,
// which the session controller calls on every pass, stores in the outbox
// the events of the steps a session shows that are not stored yet; Run
// delivers what the outbox holds to the sinks, oldest first, each sink on
// its own: a sink that fails is tried again after a backoff that doubles up
// to a bound, and the others go on. A sink that is down never holds a
// session up: sessions wait for the outbox (etcd) only, and the outbox is
// bounded (the oldest events are dropped, and counted, past
// maxPending). A delivered event stays in the outbox, with no sink pending,
// until its session is gone, so that it is not stored and delivered again.
package sessionevents

import (
	"context"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents"
	"github.com/clustergate/clustergate/pkg/sessionevents/outbox"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
)

// Store is the outbox.
type Store interface {
	Add(ctx context.Context, e sessionevents.Event, pending []string) (bool, error)
	List(ctx context.Context) ([]outbox.Entry, error)
	Done(ctx context.Context, id string, sinks ...string) error
	Delete(ctx context.Context, id string) error
}

// Sender posts events to one sink.
type Sender interface {
	Name() string
	Send(ctx context.Context, e sessionevents.Event) error
}

// Sinks are the sinks in effect: the server's follow the changes of
// --session-event-sinks-config (sinks.File).
type Sinks interface {
	// Current is the configuration in effect and a sender per sink.
	Current() (*sinks.Configuration, []Sender)
	// Changed is closed when Current changes.
	Changed() <-chan struct{}
}

// FileSinks are the sinks of a configuration file, as it changes.
type FileSinks struct{ File *sinks.File }

// Current is the file's configuration in effect and its senders.
func (f FileSinks) Current() (*sinks.Configuration, []Sender) {
	loaded := f.File.Current()
	senders := make([]Sender, len(loaded.Senders))
	for i, s := range loaded.Senders {
		senders[i] = s
	}
	return loaded.Config, senders
}

// Changed is closed when the file's configuration changes.
func (f FileSinks) Changed() <-chan struct{} { return f.File.Changed() }

// Resync is how often the outbox is read again when nothing wakes the
// delivery earlier: a new event stored by this replica wakes it at once.
const Resync = 10 * time.Second

// Controller stores and delivers session events.
type Controller struct {
	sinks           Sinks
	store           Store
	sessions        listers.SessionLister
	approvalTimeout time.Duration
	clock           clock.Clock

	mu sync.Mutex
	// history holds the ids stored per session; nil until read from the
	// outbox.
	history map[types.UID]sessionevents.History
	// retries are the sinks that failed: how often in a row, and when to
	// try again.
	retries map[string]retry
	wake    chan struct{}
	// inEffect is the configuration of the last pass; a new one starts
	// the retries afresh and the metrics of new sinks.
	inEffect *sinks.Configuration
}

type retry struct {
	failures int
	at       time.Time
}

// New returns the controller of the sinks. approvalTimeout is the
// server's --session-approval-timeout.
func New(sinks Sinks, store Store, sessions listers.SessionLister, approvalTimeout time.Duration, clk clock.Clock) *Controller {
	return &Controller{sinks: sinks, store: store, sessions: sessions, approvalTimeout: approvalTimeout, clock: clk,
		retries: map[string]retry{}, wake: make(chan struct{}, 1)}
}

// Record stores the events of the steps s shows that the outbox does not
// hold yet.
func (c *Controller) Record(ctx context.Context, s *v1alpha1.Session) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.load(ctx); err != nil {
		return err
	}
	h := c.history[s.UID]
	if h == nil {
		h = sessionevents.History{}
		c.history[s.UID] = h
	}
	added := false
	cfg, _ := c.sinks.Current()
	for _, e := range sessionevents.Derive(s, h, c.approvalTimeout, c.clock.Now()) {
		ok, err := c.store.Add(ctx, e, cfg.For(e.Type))
		if err != nil {
			return err
		}
		h[e.ID] = true
		added = added || ok
		if ok {
			eventsStored.WithLabelValues(string(e.Type)).Inc()
			klog.FromContext(ctx).V(2).Info("Session event stored", "id", e.ID, "type", e.Type)
		}
	}
	if added {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// load reads the ids the outbox holds, once. c.mu is held.
func (c *Controller) load(ctx context.Context) error {
	if c.history != nil {
		return nil
	}
	entries, err := c.store.List(ctx)
	if err != nil {
		return err
	}
	c.history = map[types.UID]sessionevents.History{}
	for _, e := range entries {
		c.remember(e.Event)
	}
	return nil
}

func (c *Controller) remember(e sessionevents.Event) {
	h := c.history[e.SessionUID()]
	if h == nil {
		h = sessionevents.History{}
		c.history[e.SessionUID()] = h
	}
	h[e.ID] = true
}

// Run delivers events until ctx ends; then this replica's gauges go, as
// it no longer delivers.
func (c *Controller) Run(ctx context.Context) {
	defer resetGauges()
	for {
		changed := c.sinks.Changed()
		wait := c.deliver(ctx)
		t := c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.wake:
			t.Stop()
		case <-changed:
			t.Stop()
		case <-t.C():
		}
	}
}

// deliver makes one pass over the outbox and returns when to make the next:
// it drops what is over the bound, removes delivered events of sessions
// that are gone, and sends each sink its pending events, oldest first,
// unless it waits for a retry.
func (c *Controller) deliver(ctx context.Context) time.Duration {
	logger := klog.FromContext(ctx)
	entries, err := c.store.List(ctx)
	if err != nil {
		logger.Error(err, "Reading the session events outbox")
		return Resync
	}
	c.mu.Lock()
	if c.history == nil {
		c.history = map[types.UID]sessionevents.History{}
	}
	for _, e := range entries {
		// Events stored by another replica, or before a restart.
		c.remember(e.Event)
	}
	c.mu.Unlock()
	slices.SortFunc(entries, func(a, b outbox.Entry) int {
		if sessionevents.Less(a.Event, b.Event) {
			return -1
		}
		return 1
	})
	cfg, senders := c.sinks.Current()
	c.takeEffect(cfg, senders)
	entries = c.dropOverBound(ctx, entries, cfg.MaxPending)
	c.collect(ctx, entries)

	now := c.clock.Now()
	next := Resync
	var wg sync.WaitGroup
	for _, s := range senders {
		var queue []sessionevents.Event
		for _, e := range entries {
			if slices.Contains(e.Pending, s.Name()) {
				queue = append(queue, e.Event)
			}
		}
		c.mu.Lock()
		r := c.retries[s.Name()]
		c.mu.Unlock()
		if len(queue) > 0 && now.Before(r.at) {
			next = min(next, r.at.Sub(now))
			setPending(s.Name(), queue)
			continue
		}
		wg.Go(func() { c.send(ctx, cfg, s, queue) })
	}
	wg.Wait()
	c.mu.Lock()
	for _, r := range c.retries {
		if r.failures > 0 {
			next = min(next, max(r.at.Sub(c.clock.Now()), time.Millisecond))
		}
	}
	c.mu.Unlock()
	return next
}

// send delivers queue to one sink in order, and stops at the first
// failure: the sink is tried again after its backoff.
func (c *Controller) send(ctx context.Context, cfg *sinks.Configuration, s Sender, queue []sessionevents.Event) {
	name := s.Name()
	for i, e := range queue {
		if err := s.Send(ctx, e); err != nil {
			eventsFailed.WithLabelValues(name).Inc()
			c.mu.Lock()
			r := c.retries[name]
			r.failures++
			r.at = c.clock.Now().Add(Backoff(r.failures, cfg.InitialBackoff.Duration, cfg.MaxBackoff.Duration))
			c.retries[name] = r
			c.mu.Unlock()
			klog.FromContext(ctx).Info("Session event not delivered; trying again later", "sink", name, "id", e.ID,
				"failures", r.failures, "retryAt", r.at, "err", err)
			setPending(name, queue[i:])
			return
		}
		eventsDelivered.WithLabelValues(name).Inc()
		c.mu.Lock()
		delete(c.retries, name)
		c.mu.Unlock()
		if err := c.store.Done(ctx, e.ID, name); err != nil {
			// Sent again at the next pass: at least once.
			klog.FromContext(ctx).Error(err, "Marking a session event delivered", "sink", name, "id", e.ID)
			setPending(name, queue[i:])
			return
		}
	}
	setPending(name, nil)
}

// takeEffect starts a configuration that is new since the last pass: the
// sinks that failed are tried at once (their URL or CA may be what
// changed), the metrics of new sinks start at zero and the gauges of
// removed ones go. Events pending for a removed sink stay in the outbox
// (counted by maxPending) and go to it if it comes back under its name.
func (c *Controller) takeEffect(cfg *sinks.Configuration, senders []Sender) {
	if cfg == c.inEffect {
		return
	}
	if c.inEffect != nil {
		for _, s := range c.inEffect.Sinks {
			if !slices.ContainsFunc(cfg.Sinks, func(n sinks.Sink) bool { return n.Name == s.Name }) {
				forgetGauges(s.Name)
			}
		}
	}
	for _, s := range senders {
		initMetrics(s.Name())
	}
	c.mu.Lock()
	c.retries = map[string]retry{}
	c.mu.Unlock()
	c.inEffect = cfg
}

// dropOverBound drops the oldest pending events past maxPending, for
// every sink, and returns the entries left pending or delivered.
func (c *Controller) dropOverBound(ctx context.Context, entries []outbox.Entry, maxPending int) []outbox.Entry {
	pending := 0
	for _, e := range entries {
		if len(e.Pending) > 0 {
			pending++
		}
	}
	for i := range entries {
		if pending <= maxPending {
			break
		}
		e := &entries[i]
		if len(e.Pending) == 0 {
			continue
		}
		if err := c.store.Done(ctx, e.Event.ID); err != nil {
			klog.FromContext(ctx).Error(err, "Dropping a session event over the bound", "id", e.Event.ID)
			break
		}
		klog.FromContext(ctx).Info("Session event dropped: more than maxPending wait", "id", e.Event.ID, "sinks", e.Pending, "maxPending", maxPending)
		for _, s := range e.Pending {
			eventsDropped.WithLabelValues(s).Inc()
		}
		e.Pending = nil
		pending--
	}
	return entries
}

// collect removes delivered events whose session is gone: no derivation
// can store them again.
func (c *Controller) collect(ctx context.Context, entries []outbox.Entry) {
	for _, e := range entries {
		if len(e.Pending) > 0 || c.sessionExists(e.Event) {
			continue
		}
		if err := c.store.Delete(ctx, e.Event.ID); err != nil {
			klog.FromContext(ctx).Error(err, "Removing a delivered session event", "id", e.Event.ID)
			continue
		}
		c.mu.Lock()
		if h := c.history[e.Event.SessionUID()]; h != nil {
			delete(h, e.Event.ID)
			if len(h) == 0 {
				delete(c.history, e.Event.SessionUID())
			}
		}
		c.mu.Unlock()
	}
}

func (c *Controller) sessionExists(e sessionevents.Event) bool {
	ref := e.Data.Session
	s, err := c.sessions.Sessions(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return false
	}
	return err != nil || s.UID == ref.UID
}

// Backoff is the wait after failures failures in a row: initial, doubled
// after each further failure, at most maxBackoff.
func Backoff(failures int, initial, maxBackoff time.Duration) time.Duration {
	d := initial
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}
