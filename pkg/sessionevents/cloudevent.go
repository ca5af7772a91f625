// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessionevents

import (
	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// DefaultSource is the CloudEvents source of the events when the sinks'
// configuration names none.
const DefaultSource = "clustergate"

// CloudEvent is the event as a CloudEvent 1.0 of source: its id, type,
// time and subject ("namespaces/NS/sessions/NAME"), and Data as JSON.
func (e Event) CloudEvent(source string) (cloudevents.Event, error) {
	ce := cloudevents.NewEvent(cloudevents.VersionV1)
	ce.SetID(e.ID)
	ce.SetType(string(e.Type))
	ce.SetSource(source)
	ce.SetSubject(e.Subject())
	ce.SetTime(e.Time)
	if err := ce.SetData(cloudevents.ApplicationJSON, e.Data); err != nil {
		return ce, err
	}
	return ce, ce.Validate()
}
