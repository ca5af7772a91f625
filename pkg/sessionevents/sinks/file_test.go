// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sinks

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics/testutil"
)

// TestFileReload changes the files of a configuration step by step: a
// change that loads takes effect and is announced; one that does not (an
// invalid file, a CA that is no certificate, a secret gone) leaves the
// previous configuration in effect and is counted once; a file that did
// not change is not loaded again.
func TestFileReload(t *testing.T) {
	s, _ := sink(t, CloudEventsBinary, http.StatusOK)
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sinks.yaml")
	config := func(names ...string) string {
		out := fmt.Sprintf("apiVersion: %s\nkind: %s\nsinks:\n", APIVersion, Kind)
		for _, n := range names {
			out += fmt.Sprintf("- {name: %s, url: %q, caFile: %q, hmacSecretFile: %q}\n", n, s.URL, s.CAFile, s.HMACSecretFile)
		}
		return out
	}
	write := func(name, data string) {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(path, config("siem"))
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name string
		// change changes the files.
		change      func()
		wantSinks   []string
		wantChanged bool
		// wantOK: the files are in effect as they are.
		wantOK bool
		// wantFailures is how many failed reloads were counted so far.
		wantFailures float64
	}{
		{name: "unchanged", change: func() {}, wantSinks: []string{"siem"}, wantOK: true},
		{name: "a sink added", change: func() { write(path, config("siem", "chat")) }, wantSinks: []string{"siem", "chat"}, wantChanged: true, wantOK: true},
		{name: "invalid", change: func() { write(path, config("siem", "Not_A_Name")) }, wantSinks: []string{"siem", "chat"}, wantFailures: 1},
		{name: "still invalid, counted once", change: func() {}, wantSinks: []string{"siem", "chat"}, wantFailures: 1},
		{name: "fixed", change: func() { write(path, config("siem")) }, wantSinks: []string{"siem"}, wantChanged: true, wantFailures: 1, wantOK: true},
		{name: "the CA is no certificate", change: func() { write(s.CAFile, "garbage") }, wantSinks: []string{"siem"}, wantFailures: 2},
		{name: "the CA is back: nothing to load", change: func() { write(s.CAFile, string(ca)) }, wantSinks: []string{"siem"}, wantFailures: 2, wantOK: true},
		{name: "the secret is gone", change: func() { _ = os.Remove(s.HMACSecretFile) }, wantSinks: []string{"siem"}, wantFailures: 3},
	}
	failuresBefore, _ := testutil.GetCounterMetricValue(reloads.WithLabelValues("failure"))
	for _, step := range steps {
		before, changed := f.Current(), f.Changed()
		step.change()
		f.Reload(context.Background())
		after := f.Current()
		var names []string
		for _, s := range after.Senders {
			names = append(names, s.Name())
		}
		if diff := cmp.Diff(step.wantSinks, names); diff != "" {
			t.Errorf("%s: sinks (-want +got):\n%s", step.name, diff)
		}
		select {
		case <-changed:
			if !step.wantChanged || after == before {
				t.Errorf("%s: announced a change", step.name)
			}
		default:
			if step.wantChanged || after != before {
				t.Errorf("%s: the change was not announced", step.name)
			}
		}
		failures, _ := testutil.GetCounterMetricValue(reloads.WithLabelValues("failure"))
		if failures-failuresBefore != step.wantFailures {
			t.Errorf("%s: %v failed reloads counted, want %v", step.name, failures-failuresBefore, step.wantFailures)
		}
		if ok, _ := testutil.GetGaugeMetricValue(reloadSucceeded); (ok == 1) != step.wantOK {
			t.Errorf("%s: last reload successful %v", step.name, ok)
		}
	}
}
