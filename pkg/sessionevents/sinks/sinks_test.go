// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sinks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/sessionevents"
)

var event = sessionevents.Event{ID: "u1.requested.0", Type: sessionevents.Requested, Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
	Data: sessionevents.Data{Session: sessionevents.SessionRef{Namespace: "shop", Name: "fix", UID: "u1"}, Owner: "alice",
		Message: "alice asks for the opening of session shop/fix: kubectl session approve -n shop fix",
		Request: &sessionevents.Request{ApproveCommand: "kubectl session approve -n shop fix", ApprovalRequired: true}}}

// received is what a test sink got: the request, its body, and the event
// the CloudEvents SDK reads from it.
type received struct {
	header http.Header
	body   []byte
	event  *cloudevents.Event
}

// sink starts an HTTPS server that answers status and records what it
// gets, and returns a sink configuration for it.
func sink(t *testing.T, format Format, status int) (Sink, chan received) {
	t.Helper()
	got := make(chan received, 10)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{header: r.Header, body: body}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if format != Slack {
			ev, err := cehttp.NewEventFromHTTPRequest(r)
			if err != nil {
				t.Errorf("not a CloudEvent: %v", err)
			}
			rec.event = ev
		}
		got <- rec
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Sink{Name: "test", URL: srv.URL + "/events", CAFile: ca, HMACSecretFile: secret, Format: format,
		Timeout: metav1.Duration{Duration: 5 * time.Second}}, got
}

func TestSend(t *testing.T) {
	for _, format := range []Format{CloudEventsBinary, CloudEventsStructured, Slack} {
		t.Run(string(format), func(t *testing.T) {
			s, got := sink(t, format, http.StatusAccepted)
			sender, err := NewSender(s, "https://garden.example.com")
			if err != nil {
				t.Fatal(err)
			}
			if err := sender.Send(context.Background(), event); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if want := Signature([]byte("s3cret"), r.body); r.header.Get(SignatureHeader) != want {
				t.Errorf("signature %q, want %q", r.header.Get(SignatureHeader), want)
			}
			switch format {
			case Slack:
				var body map[string]string
				if err := json.Unmarshal(r.body, &body); err != nil || body["text"] != "alice asks for the opening of session shop/fix: `kubectl session approve -n shop fix`" {
					t.Errorf("slack body %s, %v", r.body, err)
				}
			default:
				ce := r.event
				if ce == nil || ce.ID() != event.ID || ce.Source() != "https://garden.example.com" || ce.Subject() != "namespaces/shop/sessions/fix" {
					t.Fatalf("event %v", ce)
				}
				structured := strings.HasPrefix(r.header.Get("Content-Type"), "application/cloudevents+json")
				if structured != (format == CloudEventsStructured) {
					t.Errorf("content type %q for %s", r.header.Get("Content-Type"), format)
				}
				var d sessionevents.Data
				if err := ce.DataAs(&d); err != nil || d.Request.ApproveCommand != event.Data.Request.ApproveCommand {
					t.Errorf("data %+v, %v", d, err)
				}
			}
		})
	}
}

// TestSendFails: a sink that answers an error, or one whose certificate
// the CA does not verify, has not acknowledged the event.
func TestSendFails(t *testing.T) {
	s, _ := sink(t, CloudEventsBinary, http.StatusServiceUnavailable)
	sender, err := NewSender(s, "clustergate")
	if err != nil {
		t.Fatal(err)
	}
	if err := sender.Send(context.Background(), event); err == nil {
		t.Error("a 503 was taken as delivered")
	}
	// Another CA: a self-signed certificate of its own.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	s.CAFile = filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(s.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	sender, err = NewSender(s, "clustergate")
	if err != nil {
		t.Fatal(err)
	}
	if err := sender.Send(context.Background(), event); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a sink with another CA: %v", err)
	}
}

func TestValidate(t *testing.T) {
	valid := func() *Configuration {
		c := &Configuration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
			Sinks: []Sink{{Name: "siem", URL: "https://siem.example.com/in"}}}
		c.Default()
		return c
	}
	tests := []struct {
		name string
		edit func(*Configuration)
		want string
	}{
		{name: "valid", edit: func(*Configuration) {}},
		{name: "http", edit: func(c *Configuration) { c.Sinks[0].URL = "http://siem.example.com" }, want: "sinks[0].url"},
		{name: "unknown type", edit: func(c *Configuration) { c.Sinks[0].Types = []sessionevents.Type{"dev.clustergate.session.nope"} }, want: "sinks[0].types[0]"},
		{name: "duplicate name", edit: func(c *Configuration) { c.Sinks = append(c.Sinks, c.Sinks[0]) }, want: "sinks[1].name"},
		{name: "bad name", edit: func(c *Configuration) { c.Sinks[0].Name = "Siem" }, want: "sinks[0].name"},
		{name: "format", edit: func(c *Configuration) { c.Sinks[0].Format = "xml" }, want: "sinks[0].format"},
		{name: "backoff", edit: func(c *Configuration) { c.MaxBackoff.Duration = time.Millisecond }, want: "maxBackoff"},
		{name: "kind", edit: func(c *Configuration) { c.Kind = "Sinks" }, want: "apiVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(c)
			errs := c.Validate().ToAggregate()
			switch {
			case tt.want == "" && errs != nil:
				t.Errorf("refused: %v", errs)
			case tt.want != "" && (errs == nil || !strings.Contains(errs.Error(), tt.want)):
				t.Errorf("got %v, want an error at %s", errs, tt.want)
			}
		})
	}
	c := valid()
	c.Sinks[0].Types = []sessionevents.Type{sessionevents.Requested}
	if got := c.For(sessionevents.Requested); len(got) != 1 {
		t.Errorf("sinks for requested: %v", got)
	}
	if got := c.For(sessionevents.Ended); len(got) != 0 {
		t.Errorf("sinks for ended: %v", got)
	}
}
