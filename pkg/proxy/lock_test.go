// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
	"github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
)

// TestEndWithLocks drives the tracker from a locks informer: a lock on
// the owner cuts the open connection of the session with the lock's name
// and reason and refuses new ones; deleting it accepts them again, and so
// does the expiry of a lock, without any event.
func TestEndWithLocks(t *testing.T) {
	s := session("s1", metav1.ConditionTrue, false)
	s.Spec.Owner.Username = "alice"
	other := session("s2", metav1.ConditionTrue, false)
	other.Spec.Owner.Username = "bob"
	r, client := trackerWithLocks(t, s, other)

	open := func(uid types.UID) (context.Context, error) {
		conn, release, err := r.Open(context.Background(), uid, "alice", time.Now().Add(time.Hour))
		if err == nil {
			t.Cleanup(release)
		}
		return conn, err
	}
	// waitOpen polls until opening uid gives want (nil: succeeds).
	waitOpen := func(what string, uid types.UID, want error) {
		t.Helper()
		var got error
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			_, got = open(uid)
			return errors.Is(got, want) || (want == nil && got == nil), nil
		}); err != nil {
			t.Fatalf("%s: open gives %v, want %v", what, got, want)
		}
	}
	conn, err := open("s1")
	must(t, err)

	locks := client.ClustergateV1alpha1().SessionLocks()
	lock := &v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc"}, Spec: v1alpha1.SessionLockSpec{User: "alice", Reason: "INC-1"}}
	_, err = locks.Create(context.Background(), lock, metav1.CreateOptions{})
	must(t, err)
	select {
	case <-conn.Done():
		if cause := context.Cause(conn); !errors.Is(cause, ErrLocked) || cause.Error() != v1alpha1.LockMessage("inc", "INC-1") {
			t.Errorf("connection ended with %v, want the lock's message", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the open connection was not ended by the lock")
	}
	if _, err := open("s1"); !errors.Is(err, ErrLocked) {
		t.Errorf("open while locked: %v, want ErrLocked", err)
	}
	if _, err := open("s2"); err != nil {
		t.Errorf("open of bob's session: %v, want no lock", err)
	}
	if msg, ok := r.Holding(v1alpha1.LockSubjectOf(s)); !ok || !strings.Contains(msg, "INC-1") {
		t.Errorf("Holding = %q, %v; want the lock", msg, ok)
	}

	must(t, locks.Delete(context.Background(), "inc", metav1.DeleteOptions{}))
	waitOpen("unlocked", "s1", nil)

	// A lock that expires lifts itself: the tracker looks again then.
	expiresAt := metav1.NewTime(time.Now().Add(500 * time.Millisecond))
	lock.Spec.ExpiresAt = &expiresAt
	_, err = locks.Create(context.Background(), lock, metav1.CreateOptions{})
	must(t, err)
	waitOpen("locked until it expires", "s1", ErrLocked)
	waitOpen("expired", "s1", nil)
	if time.Now().Before(expiresAt.Time) {
		t.Errorf("accepted again before the lock expired at %s", expiresAt.Time)
	}
}

// TestLockHoldsTheRequester: a session assigned to alice with fewer groups
// than she has escapes a lock on her group sre as a whole, but her own
// requests through it, authenticated in sre, do not: her open watch ends
// with an ERROR naming the lock and her next request is refused with the
// lock's 403 Status, while a
// request by the same session's owner outside sre goes on.
func TestLockHoldsTheRequester(t *testing.T) {
	u, tr := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}`+"\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("watch") == "true" {
			<-r.Context().Done()
		}
	})
	s := session("s1", metav1.ConditionTrue, false)
	s.Spec.Owner = v1alpha1.SessionOwner{Username: "alice", Groups: []string{"system:authenticated"}}
	r, client := trackerWithLocks(t, s)

	// as is a request through s1 by alice with the groups she has now.
	as := func(groups ...string) Target {
		tgt := target(u, tr)
		subject := v1alpha1.LockSubjectOf(s)
		subject.Requester = &v1alpha1.LockPerson{User: "alice", Groups: groups}
		tgt.Subject = &subject
		return tgt
	}
	inSRE, outside := as("sre", "system:authenticated"), as("system:authenticated")
	resp, err := http.Get(serveThroughProxy(t, r, inSRE) + "/proxy/api/v1/configmaps?watch=true")
	must(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"ADDED"`) {
		t.Fatalf("first event: %q", lines.Text())
	}

	lock := &v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc"}, Spec: v1alpha1.SessionLockSpec{Group: "sre", Reason: "INC-2"}}
	_, err = client.ClustergateV1alpha1().SessionLocks().Create(context.Background(), lock, metav1.CreateOptions{})
	must(t, err)
	want := v1alpha1.LockMessage("inc", "INC-2")
	scanned := make(chan bool, 1)
	go func() { scanned <- lines.Scan() }()
	select {
	case ok := <-scanned:
		if !ok {
			t.Fatalf("the watch of alice in sre ended without a final event: %v", lines.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the open watch of alice in sre was not cut by the lock on sre")
	}
	var final struct {
		Type   string
		Object struct{ Reason, Message string }
	}
	must(t, json.Unmarshal(lines.Bytes(), &final))
	// A watch cut off ends with an ERROR event of reason Gone, whatever
	// ended it (finishWatch); its message names the lock.
	if final.Type != "ERROR" || !strings.Contains(final.Object.Message, want) {
		t.Errorf("final event %s, want an ERROR naming %q", lines.Text(), want)
	}

	tests := []struct {
		name   string
		tgt    Target
		refuse bool
	}{
		{name: "alice in sre", tgt: inSRE, refuse: true},
		{name: "alice outside sre", tgt: outside},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refused := &responder{}
			w := httptest.NewRecorder()
			r.Handler(tt.tgt, "/api", refused).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x", nil))
			switch {
			case tt.refuse && (!apierrors.IsForbidden(refused.err) || !strings.Contains(refused.err.Error(), want)):
				t.Errorf("refusal %v, want a 403 naming %q", refused.err, want)
			case !tt.refuse && (refused.err != nil || w.Code != http.StatusOK):
				t.Errorf("request gave %d, %v; want it served", w.Code, refused.err)
			}
		})
	}
}

// trackerWithLocks is a tracker that follows the sessions and SessionLocks
// of a fake client holding sessions, its informers started and synced
// until the test ends.
func trackerWithLocks(t *testing.T, sessions ...*v1alpha1.Session) (*Tracker, *fake.Clientset) {
	t.Helper()
	objects := make([]runtime.Object, len(sessions))
	for i, s := range sessions {
		objects[i] = s
	}
	client := fake.NewSimpleClientset(objects...)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	r := NewTracker(clock.RealClock{}, Limits{})
	informer := factory.Clustergate().V1alpha1().Sessions().Informer()
	must(t, r.EndWithSessions(informer, func(types.UID) {}))
	must(t, r.EndWithLocks(factory.Clustergate().V1alpha1().SessionLocks().Informer(), informer.GetStore()))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return r, client
}
