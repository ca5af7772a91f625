// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// idleInterval and idleTimeout are the test replicas' last-used interval
// and default idle timeout, so that the test takes seconds instead of the
// minutes of the defaults (a minute, at least four). The timeout is eight
// intervals, not the shortest four, so that the test learns the final
// deadline well before it comes.
const (
	idleInterval = time.Second
	idleTimeout  = 8 * time.Second
)

// TestIdleSession runs two replicas with a one-second last-used interval
// and reaches them directly, as the aggregator would, since the shared
// first replica keeps the default minute and would refuse a four-second
// idle timeout. An open watch on each keeps the session alive past its
// idle timeout, while the replicas record its use at most once a second
// between them; after the watches close, the session ends at lastUsedAt +
// idleTimeout: every replica refuses it within a second, its Ready
// condition and an event say Idle, and its credentials are removed.
func TestIdleSession(t *testing.T) {
	ctx := context.Background()
	flags := []string{fmt.Sprintf("--session-last-used-interval=%s", idleInterval), fmt.Sprintf("--session-idle-timeout=%s", idleTimeout)}
	replicas := make([]localcluster.Replica, 2)
	for i := range replicas {
		r, err := cp.StartReplica(ctx, fmt.Sprintf("clustergate-idle-%d", i+1), flags...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cp.StopComponent(r.Name) }()
		replicas[i] = r
	}
	kube, admin := clients(t)
	ns := namespace(t, "idle")
	grant(t, ns, "alice", "clustergate:session-user", "clustergate:target-viewer")
	alice, err := versioned.NewForConfig(cp.FrontProxyConfig(replicas[0].URL, "alice", "sre"))
	if err != nil {
		t.Fatal(err)
	}
	newSession := func(name string, idle *metav1.Duration) (*v1alpha1.Session, error) {
		return alice.ClustergateV1alpha1().Sessions(ns).Create(ctx, &v1alpha1.Session{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: 10 * time.Minute}, AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
				Target: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "local"}}, IdleTimeout: idle},
		}, metav1.CreateOptions{})
	}

	t.Run("bounds and the server's default", func(t *testing.T) {
		_, err := newSession("too-short", &metav1.Duration{Duration: 3 * time.Second})
		wantErr(t, err, "spec.idleTimeout: Invalid value")
		if !apierrors.IsInvalid(err) {
			t.Errorf("got %v, want 422", err)
		}
	})
	s, err := newSession("idle", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.IdleTimeout == nil || s.Spec.IdleTimeout.Duration != idleTimeout {
		t.Fatalf("spec.idleTimeout %v, want the server's default %s", s.Spec.IdleTimeout, idleTimeout)
	}
	s = waitSessionReady(t, admin, ns, "idle")

	// Status writes of lastUsedAt, as a watch on the session sees them.
	var mu sync.Mutex
	var writes []time.Time
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w, err := admin.ClustergateV1alpha1().Sessions(ns).Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=idle", ResourceVersion: s.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		last := s.Status.LastUsedAt
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*v1alpha1.Session); ok && !u.Status.LastUsedAt.Equal(last) {
				last = u.Status.LastUsedAt
				mu.Lock()
				writes = append(writes, time.Now())
				mu.Unlock()
			}
		}
	}()
	writesSince := func(from time.Time) []time.Time {
		mu.Lock()
		defer mu.Unlock()
		var out []time.Time
		for _, at := range writes {
			if !at.Before(from) {
				out = append(out, at)
			}
		}
		return out
	}
	checkCoalesced := func(t *testing.T, what string, from time.Time, took time.Duration) {
		got := writesSince(from)
		t.Logf("%s: %d writes of lastUsedAt in %s", what, len(got), took.Round(100*time.Millisecond))
		if most := int(took/idleInterval) + 2; len(got) > most {
			t.Errorf("%s: %d writes of lastUsedAt in %s, want at most %d (one an interval across the replicas)", what, len(got), took, most)
		}
		for i := 1; i < len(got); i++ {
			// The watch's delivery may bunch two writes a little.
			if gap := got[i].Sub(got[i-1]); gap < idleInterval/2 {
				t.Errorf("%s: writes %d and %d of lastUsedAt %s apart, want an interval", what, i, i+1, gap)
			}
		}
	}
	proxied := func(r localcluster.Replica) kubernetes.Interface {
		cfg := cp.FrontProxyConfig(r.URL, "alice", "sre")
		cfg.Host += v1alpha1.ProxyEndpoint(ns, "idle")
		k, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	targets := []kubernetes.Interface{proxied(replicas[0]), proxied(replicas[1])}

	t.Run("a request loop on both replicas is coalesced", func(t *testing.T) {
		from := time.Now()
		for time.Since(from) < 5*time.Second {
			for _, k := range targets {
				if _, err := k.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkCoalesced(t, "40+ requests", from, time.Since(from))
	})

	// A watch on each replica, held open for three idle timeouts.
	streamCtx, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	ended := make([]chan struct{}, len(targets))
	for i, k := range targets {
		w, err := k.CoreV1().ConfigMaps("default").Watch(streamCtx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ended[i] = make(chan struct{})
		go func() {
			defer close(ended[i])
			for range w.ResultChan() {
			}
		}()
	}
	from := time.Now()
	time.Sleep(3 * idleTimeout)
	for i, e := range ended {
		select {
		case <-e:
			t.Fatalf("the watch on replica %d ended while open, %s into it", i+1, time.Since(from))
		default:
		}
	}
	now, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if state := v1alpha1.SessionStateAt(now, time.Now()); state != v1alpha1.SessionLive {
		t.Fatalf("session %s after %s of open watches, want Live", state, time.Since(from))
	}
	t.Run("open watches are coalesced", func(t *testing.T) { checkCoalesced(t, "two open watches", from, time.Since(from)) })
	closeStreams()
	closed := time.Now()
	for _, e := range ended {
		<-e
	}

	// The replicas record the watches' end within two intervals; from
	// then on, the idle deadline is known.
	time.Sleep(3 * idleInterval)
	now, err = admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline, _ := v1alpha1.IdleDeadline(now)
	t.Logf("watches closed at %s; lastUsedAt %s, idle deadline %s", closed.Format(time.RFC3339Nano), now.Status.LastUsedAt.Format(time.RFC3339), deadline.Format(time.RFC3339))
	if since := now.Status.LastUsedAt.Sub(closed); since < -time.Second || since > time.Second {
		t.Errorf("lastUsedAt %s is %s from the watches' end %s, want the last use to the second", now.Status.LastUsedAt, since, closed)
	}
	if left := time.Until(deadline); left < time.Second {
		t.Fatalf("only %s left until the idle deadline when it became known", left)
	}
	time.Sleep(time.Until(deadline.Add(-500 * time.Millisecond)))
	if s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "idle", metav1.GetOptions{}); err != nil || !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
		t.Errorf("half a second before its idle deadline the session is not Ready: %v %v", err, s.Status.Conditions)
	}

	// Half a second after the deadline every replica refuses, the shared
	// first one included.
	time.Sleep(time.Until(deadline.Add(500 * time.Millisecond)))
	first := cp.FrontProxyConfig(cp.ClustergateURL, "alice", "sre")
	first.Host += v1alpha1.ProxyEndpoint(ns, "idle")
	firstTarget, err := kubernetes.NewForConfig(first)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range append(targets, firstTarget) {
		_, err := k.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		t.Logf("replica %d, %s after the idle deadline: %v", i+1, time.Since(deadline).Round(time.Millisecond), err)
		if !apierrors.IsGone(err) || !strings.Contains(err.Error(), "idle") {
			t.Errorf("replica %d %s after the idle deadline: %v, want 410 Gone saying idle", i+1, time.Since(deadline), err)
		}
	}

	var ready *metav1.Condition
	eventually(t, 10*time.Second, "Ready=False, reason Idle", func() error {
		s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "idle", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ready = meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); ready == nil || ready.Reason != v1alpha1.SessionReasonIdle {
			return fmt.Errorf("Ready %+v", ready)
		}
		return nil
	})
	late := ready.LastTransitionTime.Sub(deadline)
	t.Logf("Ready=False (Idle) at %s, %s after the idle deadline (second precision): %s", ready.LastTransitionTime.Format(time.RFC3339), late, ready.Message)
	if late < 0 || late > time.Second {
		t.Errorf("Ready turned Idle %s after the idle deadline, want within 1s", late)
	}
	eventually(t, 10*time.Second, "an Idle event", func() error {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=idle,reason=Idle"})
		if err != nil {
			return err
		}
		if len(events.Items) == 0 {
			return fmt.Errorf("no event with reason Idle")
		}
		t.Logf("event: %s", events.Items[0].Message)
		return nil
	})
	eventually(t, 10*time.Second, "the credentials removed", func() error {
		_, err := kube.CoreV1().Secrets("clustergate-system").Get(ctx, credentials.SecretName(s.UID), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("credentials Secret: %w", err)
		}
		return nil
	})
	out := kubectl(t, "-n", ns, "get", "sessions", "-o", "wide")
	t.Logf("kubectl get sessions -o wide:\n%s", out)
	if !strings.Contains(out, "LAST-USED") || !strings.Contains(out, "ago (idle 8s)") {
		t.Errorf("kubectl get sessions -o wide shows no last use:\n%s", out)
	}

	// Removed before its expiry, it is counted by how it ended: idle. The
	// leader counts it; whichever replica that is.
	const endedIdle = `clustergate_sessions_ended_total{access_level="viewer",reason="idle",target_kind="shoot"}`
	urls := []string{cp.ClustergateURL, replicas[0].URL, replicas[1].URL}
	idleBefore := 0.0
	for _, url := range urls {
		n, _ := metricValue(t, url, endedIdle)
		idleBefore += n
	}
	if err := admin.ClustergateV1alpha1().Sessions(ns).Delete(ctx, "idle", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, admin, ns, "idle", 30*time.Second)
	idleAfter := 0.0
	for _, url := range urls {
		n, _ := metricValue(t, url, endedIdle)
		idleAfter += n
	}
	if idleAfter != idleBefore+1 {
		t.Errorf("%s went from %v to %v over the replicas, want one more", endedIdle, idleBefore, idleAfter)
	}
}
