// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"

	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/controllers/sessionevents"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents/outbox"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
)

// eventDelivery opens the outbox of session events in the server's
// storage, for the sinks of --session-event-sinks-config (loaded, their
// CAs and secrets read, when the flags were completed: a file that cannot
// be read stops the start); nil without sinks or controllers.
func (c *ExtraConfig) eventDelivery(getter generic.RESTOptionsGetter) (*controllers.EventDelivery, error) {
	file := c.Controllers.SessionEventSinks
	if file == nil || c.Standalone {
		return nil, nil
	}
	store, err := outbox.New(getter)
	if err != nil {
		return nil, err
	}
	return &controllers.EventDelivery{Outbox: store, Sinks: sessionevents.FileSinks{File: file}}, nil
}

// sessionEventsOfEveryReplica has the recorder report failed recordings
// to the outbox, and returns what runs on every replica once it serves,
// leader or not: the reload of the sinks' configuration (each replica
// stores events for the sinks it names) and the store of this replica's
// recording failures.
func (p *parts) sessionEventsOfEveryReplica(extra *ExtraConfig, sessions listers.SessionLister) func(context.Context) {
	if p.eventDelivery == nil {
		return func(context.Context) {}
	}
	var failures *sessionevents.Failures
	if p.recorder != nil {
		failures = sessionevents.NewFailures(p.eventDelivery.Outbox, p.eventDelivery.Sinks, sessions, clock.RealClock{})
		p.recorder.ReportFailuresTo(failures)
	}
	return func(ctx context.Context) {
		go extra.Controllers.SessionEventSinks.Run(ctx, sinks.ReloadInterval)
		if failures != nil {
			go failures.Run(ctx)
		}
	}
}
