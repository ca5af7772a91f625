// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// TestRecordedStreamVerification: a recorded stream its writer does not
// vouch for is refused with a Conflict that says how to read it anyway,
// and served with ?unverified=true, with a Warning.
func TestRecordedStreamVerification(t *testing.T) {
	for _, tt := range []struct {
		name       string
		removed    []string
		query      string
		wantCode   int
		wantInBody string
		warning    bool
	}{
		{name: "as written", wantCode: http.StatusOK, wantInBody: `"clustergateVerification":"verified"`},
		{name: "its manifest removed", removed: []string{"manifest.json", "live.json"}, wantCode: http.StatusConflict,
			wantInBody: "the recording is not what was written"},
		{name: "its manifest removed, read unverified", removed: []string{"manifest.json", "live.json"}, query: "?unverified=true",
			wantCode: http.StatusOK, wantInBody: `"clustergateVerification":"unverified: `, warning: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			local, err := store.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			keys, err := recording.ParseManifestKeys([]byte("k1 " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))))
			if err != nil {
				t.Fatal(err)
			}
			rec := recording.New(recording.Config{Store: local, Mode: recording.ModeBestEffort, Keys: keys})
			s, err := rec.OpenStream(ctx, v1alpha1.RecordingInfo{RecordedSession: v1alpha1.RecordedSession{Namespace: "sre", Name: "fix", UID: "u1"}, Subresource: "exec"})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			s.Wait()
			objects, err := local.List(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objects {
				for _, r := range tt.removed {
					if strings.HasSuffix(o.Key, "/"+r) {
						if err := local.Delete(ctx, o.Key); err != nil {
							t.Fatal(err)
						}
					}
				}
			}

			rest := &RecordingsREST{reader: &recording.Reader{Store: local, Keys: keys, Clock: clocktesting.NewFakeClock(time.Now().Add(time.Hour))}}
			connectCtx := genericapirequest.WithNamespace(ctx, "sre")
			responder := &statusResponder{}
			h, err := rest.Connect(connectCtx, "fix", &clustergate.SessionProxyOptions{Path: "streams/" + s.ID()}, responder)
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			responder.w = w
			filters.WithWarningRecorder(h).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x"+tt.query, nil))
			if w.Code != tt.wantCode || !strings.Contains(w.Body.String(), tt.wantInBody) {
				t.Errorf("answered %d %s, want %d with %q", w.Code, w.Body.String(), tt.wantCode, tt.wantInBody)
			}
			if tt.wantCode == http.StatusConflict && (!apierrors.IsConflict(responder.err) || !strings.Contains(responder.err.Error(), "?unverified=true")) {
				t.Errorf("refused with %v, want a Conflict naming ?unverified=true", responder.err)
			}
			if got := w.Header().Get("Warning"); (got != "") != tt.warning || (tt.warning && !strings.Contains(got, "unverified")) {
				t.Errorf("Warning %q, want one: %v", got, tt.warning)
			}
		})
	}
}
