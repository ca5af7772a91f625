// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// Adder stores an event in the outbox: all that a replica's recorder may
// do to it.
type Adder interface {
	Add(ctx context.Context, e sessionevents.Event, pending []string) (bool, error)
}

// FailureQueue bounds the failed recordings waiting to be stored; past it
// they are dropped, logged and counted.
const FailureQueue = 1000

// Failure store retries double from failureRetry up to maxFailureRetry.
const (
	failureRetry    = 100 * time.Millisecond
	maxFailureRetry = 30 * time.Second
)

// Failures stores the recording_failed events of this replica. Every
// replica runs one, leader or not: a recording fails on the replica that
// relays its stream, which writes the event into the outbox itself (its
// own etcd, through the storage layer; no API write, no other object), and
// the leader delivers it with the rest. The event's id is made of the
// stream's, so a failure stored twice is one event. The recorder reports
// on the stream's path, which must not wait for etcd: RecordingFailed only
// queues (up to FailureQueue), and Run stores, retried with backoff until
// the outbox takes it or the replica stops.
type Failures struct {
	store    Adder
	sinks    Sinks
	sessions listers.SessionLister
	clock    clock.Clock
	queue    chan sessionevents.RecordingFailure
}

// NewFailures returns the failure store of a replica: sessions is its
// cache of Sessions, which the events take their session's data from.
func NewFailures(store Adder, sinks Sinks, sessions listers.SessionLister, clk clock.Clock) *Failures {
	return &Failures{store: store, sinks: sinks, sessions: sessions, clock: clk, queue: make(chan sessionevents.RecordingFailure, FailureQueue)}
}

// RecordingFailed queues a failed recording; it never blocks.
func (f *Failures) RecordingFailed(r sessionevents.RecordingFailure) {
	select {
	case f.queue <- r:
	default:
		failuresDropped.Inc()
		klog.InfoS("Recording failure not stored: too many wait", "session", klog.KRef(r.Info.Namespace, r.Info.Name), "stream", r.Info.Stream)
	}
}

// Run stores the queued failures until ctx ends.
func (f *Failures) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-f.queue:
			f.storeFailure(ctx, r)
		}
	}
}

// storeFailure stores the event of one failure, trying again until the outbox
// takes it or ctx ends.
func (f *Failures) storeFailure(ctx context.Context, r sessionevents.RecordingFailure) {
	e := f.event(r)
	cfg, _ := f.sinks.Current()
	for wait := failureRetry; ; wait = min(2*wait, maxFailureRetry) {
		added, err := f.store.Add(ctx, e, cfg.For(e.Type))
		if err == nil {
			if added {
				eventsStored.WithLabelValues(string(e.Type)).Inc()
				klog.FromContext(ctx).V(2).Info("Session event stored", "id", e.ID, "type", e.Type)
			}
			return
		}
		klog.FromContext(ctx).Error(err, "Storing a recording failure; trying again", "id", e.ID, "retryIn", wait)
		t := f.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// event is the failure's event, with its session's data from the cache,
// or from the recording when the session is gone from it.
func (f *Failures) event(r sessionevents.RecordingFailure) sessionevents.Event {
	ref := r.Info.RecordedSession
	if s, err := f.sessions.Sessions(ref.Namespace).Get(ref.Name); err == nil && s.UID == ref.UID {
		return sessionevents.RecordingFailedEvent(s, r)
	}
	return sessionevents.RecordingFailedEvent(sessionevents.SessionOfRecording(ref), r)
}
