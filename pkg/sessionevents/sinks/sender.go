// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sinks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// SignatureHeader carries the HMAC-SHA256 of a request's body with the
// sink's secret: "sha256=<hex>".
const SignatureHeader = "X-Clustergate-Signature"

// Signature is the value of SignatureHeader for body signed with secret.
func Signature(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Sender posts events to one sink.
type Sender struct {
	sink   Sink
	source string
	http   *http.Client
	// ce sends CloudEvents; nil for the slack format.
	ce cloudevents.Client
}

// NewSender reads the sink's CA and secret and returns its sender; source
// is the events' CloudEvents source.
func NewSender(s Sink, source string) (*Sender, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("sink %s: no certificate in %s", s.Name, s.CAFile)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	var rt http.RoundTripper = transport
	if s.HMACSecretFile != "" {
		secret, err := os.ReadFile(s.HMACSecretFile)
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
		if secret = bytes.TrimSpace(secret); len(secret) == 0 {
			return nil, fmt.Errorf("sink %s: %s is empty", s.Name, s.HMACSecretFile)
		}
		rt = signing{next: transport, secret: secret}
	}
	// No redirects: a sink's URL is where the events go, and the signed
	// body must not follow a redirect elsewhere.
	client := &http.Client{Transport: rt, Timeout: s.Timeout.Duration,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	sender := &Sender{sink: s, source: source, http: client}
	if s.Format != Slack {
		p, err := cehttp.New(cehttp.WithTarget(s.URL), cehttp.WithClient(*client))
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
		if sender.ce, err = cloudevents.NewClient(p); err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
	}
	return sender, nil
}

// Name is the sink's name.
func (s *Sender) Name() string { return s.sink.Name }

// Send posts the event; nil once the sink acknowledged it with a 2xx.
func (s *Sender) Send(ctx context.Context, e sessionevents.Event) error {
	ctx, cancel := context.WithTimeout(ctx, s.sink.Timeout.Duration)
	defer cancel()
	if s.sink.Format == Slack {
		return s.post(ctx, SlackText(e))
	}
	ce, err := e.CloudEvent(s.source)
	if err != nil {
		return err
	}
	if s.sink.Format == CloudEventsStructured {
		ctx = cloudevents.WithEncodingStructured(ctx)
	} else {
		ctx = cloudevents.WithEncodingBinary(ctx)
	}
	if res := s.ce.Send(ctx, ce); !cloudevents.IsACK(res) {
		return fmt.Errorf("sink %s: %w", s.sink.Name, res)
	}
	return nil
}

// SlackText is what the slack format posts for an event: its message, with
// the command that approves a waiting request as code.
func SlackText(e sessionevents.Event) string {
	text := e.Data.Message
	if r := e.Data.Request; e.Type == sessionevents.Requested && r != nil && r.ApproveCommand != "" {
		text = strings.Replace(text, r.ApproveCommand, "`"+r.ApproveCommand+"`", 1)
	}
	return text
}

// post sends {"text": text} as JSON.
func (s *Sender) post(ctx context.Context, text string) error {
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.sink.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("sink %s: %w", s.sink.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("sink %s answered %s", s.sink.Name, resp.Status)
	}
	return nil
}

// signing adds SignatureHeader to every request: the HMAC of its body.
type signing struct {
	next   http.RoundTripper
	secret []byte
}

func (t signing) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	signed := req.Clone(req.Context())
	signed.Body, signed.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	signed.Header.Set(SignatureHeader, Signature(t.secret, body))
	return t.next.RoundTrip(signed)
}
