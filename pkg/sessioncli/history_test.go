// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// TestHistory: kubectl session history reads the request log page by page
// and shows all of it by time; an answer cut short is an error.
func TestHistory(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	var log []v1alpha1.RequestLogEntry
	for i := range 1200 {
		// Written out of time order, as chunks of replicas are.
		log = append(log, v1alpha1.RequestLogEntry{Time: at.Add(time.Duration(1199-i) * time.Second), Method: "GET", Path: fmt.Sprintf("/r%d", i), Status: 200})
	}
	log[3].Truncated = []v1alpha1.TruncatedField{{Field: "userAgent", Length: 204800}}
	log[4] = v1alpha1.RequestLogEntry{Time: log[4].Time, Lost: 7, CloseReason: "7 entries of this request log lost on this replica"}
	a := newFakeAPI(t)
	pages, abort := 0, false
	mux := a.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("GET /apis/clustergate.dev/v1alpha1/namespaces/demo/sessions/fix/recordings/requests", func(w http.ResponseWriter, r *http.Request) {
		pages++
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		from, _ := strconv.Atoi(r.URL.Query().Get("continue"))
		if limit <= 0 {
			limit = len(log)
		}
		to := min(from+limit, len(log))
		next := ""
		if to < len(log) {
			next = strconv.Itoa(to)
		}
		w.Header().Set("Content-Type", "application/json")
		if abort && from > 0 {
			_, _ = w.Write([]byte(`{"kind":"SessionRequestLog","items":[{"time":"2026-12-03T09:00:00Z"},`))
			panic(http.ErrAbortHandler)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "SessionRequestLog", "apiVersion": "clustergate.dev/v1alpha1",
			"items": log[from:to], "metadata": metav1.ListMeta{Continue: next}})
	})
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := NewCommand("session", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
		cmd.SetArgs(append(args, "--kubeconfig", *a.g.flags.KubeConfig))
		err := cmd.Execute()
		return out.String(), err
	}

	out, err := run("history", "fix")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if pages != 3 || len(lines) != 1201 || !strings.Contains(lines[1], "/r1199 ") || !strings.Contains(lines[1200], "/r0 ") {
		t.Errorf("%d pages, %d lines, first %q, last %q", pages, len(lines), lines[1], lines[len(lines)-1])
	}
	if !strings.Contains(out, "/r3 (truncated)") || !strings.Contains(out, "(7 entries of this request log lost on this replica)") {
		t.Errorf("the truncated entry or the marker is not shown:\n%.2000s", out)
	}
	out, err = run("history", "fix", "-o", "json")
	var list struct {
		Kind  string
		Items []v1alpha1.RequestLogEntry
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || list.Kind != "SessionRequestLog" || len(list.Items) != 1200 {
		t.Errorf("-o json: %d items of a %q, %v", len(list.Items), list.Kind, err)
	}
	abort = true
	if _, err := run("history", "fix"); err == nil {
		t.Error("an answer cut short, and no error")
	}
}
