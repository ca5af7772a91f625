// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/sessionevents/outbox"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
)

// eventDelivery opens the outbox of session events in the server's
// storage and builds a sender per sink (reading their CAs and secrets, so
// that a file that cannot be read stops the start); nil without sinks or
// controllers.
func (c *ExtraConfig) eventDelivery(getter generic.RESTOptionsGetter) (*controllers.EventDelivery, error) {
	cfg := c.Controllers.SessionEventSinks
	if cfg == nil || c.Standalone {
		return nil, nil
	}
	d := &controllers.EventDelivery{}
	for _, s := range cfg.Sinks {
		sender, err := sinks.NewSender(s, cfg.Source)
		if err != nil {
			return nil, err
		}
		d.Senders = append(d.Senders, sender)
	}
	store, err := outbox.New(getter)
	if err != nil {
		return nil, err
	}
	d.Outbox = store
	return d, nil
}
