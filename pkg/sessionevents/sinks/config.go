// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sinks holds where session events go: the operator's
// --session-event-sinks-config (HTTPS sinks, each with its CA, an optional
// HMAC secret, an optional filter of event types and a format) and the
// Sender that posts one event to one sink: a CloudEvent over HTTP in binary
// or structured mode with the CloudEvents SDK, or a chat message to an
// incoming webhook; signed, when the sink has a secret, in the header
// X-Clustergate-Signature: sha256=<hex HMAC-SHA256 of the body>.
package sinks

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// APIVersion and Kind of the configuration file.
const (
	APIVersion = "config.clustergate.dev/v1alpha1"
	Kind       = "SessionEventSinks"
)

// Format is how a sink gets an event.
type Format string

// The formats.
const (
	// CloudEventsBinary: a CloudEvents 1.0 HTTP request in binary mode:
	// the attributes in ce-* headers, the data as the JSON body.
	CloudEventsBinary Format = "cloudevents-binary"
	// CloudEventsStructured: in structured mode: the whole event as the
	// body, application/cloudevents+json.
	CloudEventsStructured Format = "cloudevents-structured"
	// Slack: {"text": "..."} to an incoming webhook (Slack, Mattermost,
	// or Teams' workflow webhooks that take the same body).
	Slack Format = "slack"
)

// Defaults of the configuration.
const (
	DefaultMaxPending     = 10000
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultTimeout        = 10 * time.Second
)

// Configuration is the file of --session-event-sinks-config.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`
	// Source is the CloudEvents source of the events, such as the URL of
	// the control plane; "clustergate" by default.
	Source string `json:"source,omitempty"`
	// MaxPending bounds the events waiting for a sink; past it the oldest
	// are dropped (clustergate_session_events_dropped_total). 10000 by
	// default.
	MaxPending int `json:"maxPending,omitempty"`
	// InitialBackoff and MaxBackoff bound the wait before a sink that
	// failed is tried again: doubled after each failure, from 1s up to 5m
	// by default.
	InitialBackoff metav1.Duration `json:"initialBackoff,omitempty"`
	MaxBackoff     metav1.Duration `json:"maxBackoff,omitempty"`
	// Sinks are where the events go.
	Sinks []Sink `json:"sinks"`
}

// Sink is one receiver of events.
type Sink struct {
	// Name names the sink in metrics and logs: a DNS label, unique.
	Name string `json:"name"`
	// URL is where events are posted: https only.
	URL string `json:"url"`
	// CAFile verifies the sink's certificate; the system's roots when unset.
	CAFile string `json:"caFile,omitempty"`
	// HMACSecretFile holds the secret the body is signed with, in the
	// header X-Clustergate-Signature; no signature when unset.
	HMACSecretFile string `json:"hmacSecretFile,omitempty"`
	// Types are the event types the sink gets; all when unset.
	Types []sessionevents.Type `json:"types,omitempty"`
	// Format is cloudevents-binary (the default), cloudevents-structured
	// or slack.
	Format Format `json:"format,omitempty"`
	// Timeout bounds one delivery; 10s by default.
	Timeout metav1.Duration `json:"timeout,omitempty"`
}

// Wants tells whether the sink gets events of type t.
func (s Sink) Wants(t sessionevents.Type) bool {
	return len(s.Types) == 0 || slices.Contains(s.Types, t)
}

// For returns the names of the sinks that get events of type t.
func (c *Configuration) For(t sessionevents.Type) []string {
	var names []string
	for _, s := range c.Sinks {
		if s.Wants(t) {
			names = append(names, s.Name)
		}
	}
	return names
}

// Load reads, defaults and validates the configuration in path.
func Load(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Configuration{}
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Default()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errs.ToAggregate())
	}
	return c, nil
}

// Default fills in what the configuration leaves unset.
func (c *Configuration) Default() {
	if c.Source == "" {
		c.Source = sessionevents.DefaultSource
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.InitialBackoff.Duration == 0 {
		c.InitialBackoff.Duration = DefaultInitialBackoff
	}
	if c.MaxBackoff.Duration == 0 {
		c.MaxBackoff.Duration = max(DefaultMaxBackoff, c.InitialBackoff.Duration)
	}
	for i := range c.Sinks {
		s := &c.Sinks[i]
		if s.Format == "" {
			s.Format = CloudEventsBinary
		}
		if s.Timeout.Duration == 0 {
			s.Timeout.Duration = DefaultTimeout
		}
	}
}

// Validate reports every problem of the configuration with its path.
func (c *Configuration) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion || c.Kind != Kind {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), c.APIVersion+", "+c.Kind,
			fmt.Sprintf("must be apiVersion %s, kind %s", APIVersion, Kind)))
	}
	if c.MaxPending < 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxPending"), c.MaxPending, "must be at least 1"))
	}
	if c.InitialBackoff.Duration <= 0 || c.MaxBackoff.Duration < c.InitialBackoff.Duration {
		errs = append(errs, field.Invalid(field.NewPath("maxBackoff"), c.MaxBackoff.Duration.String(), "must be positive and at least initialBackoff"))
	}
	known := sets.New(sessionevents.Types...)
	names := sets.New[string]()
	for i, s := range c.Sinks {
		p := field.NewPath("sinks").Index(i)
		for _, msg := range validation.IsDNS1123Label(s.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
		}
		if names.Has(s.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		names.Insert(s.Name)
		if u, err := url.Parse(s.URL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, field.Invalid(p.Child("url"), s.URL, "must be an https URL"))
		}
		for j, t := range s.Types {
			if !known.Has(t) {
				errs = append(errs, field.NotSupported(p.Child("types").Index(j), t, sessionevents.Types))
			}
		}
		if !slices.Contains([]Format{CloudEventsBinary, CloudEventsStructured, Slack}, s.Format) {
			errs = append(errs, field.NotSupported(p.Child("format"), s.Format, []Format{CloudEventsBinary, CloudEventsStructured, Slack}))
		}
		if s.Timeout.Duration <= 0 {
			errs = append(errs, field.Invalid(p.Child("timeout"), s.Timeout.Duration.String(), "must be positive"))
		}
	}
	return errs
}
