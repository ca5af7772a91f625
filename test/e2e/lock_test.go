// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/clustergate/clustergate/internal/localcluster"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

// lockReason is the reason of the test's locks, which every refusal names.
const lockReason = "INC-4242 credential leak"

// TestSessionLock runs two extra replicas and reaches them directly, as the
// aggregator would. alice holds a watch through her session on each; a
// lock on alice in the test's namespace, made with kubectl session lock by
// a lock-admin, ends both within a second, each replica measured on its
// own. While it holds, new requests, a new session and an extension are
// refused naming the lock, and the session shows Locked with an event;
// after kubectl session unlock the same session works again on both.
func TestSessionLock(t *testing.T) {
	ctx := context.Background()
	replicas := make([]localcluster.Replica, 2)
	for i := range replicas {
		r, err := cp.StartReplica(ctx, fmt.Sprintf("clustergate-lock-%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cp.StopComponent(r.Name) }()
		replicas[i] = r
	}
	kube, admin := clients(t)
	ns := namespace(t, "locks")
	grant(t, ns, "alice", "clustergate:session-user", "clustergate:target-viewer")
	kubectl(t, "create", "clusterrolebinding", "lock-admin-lena", "--clusterrole=clustergate:lock-admin", "--user=lena")
	t.Cleanup(func() { kubectl(t, "delete", "clusterrolebinding", "lock-admin-lena", "--wait") })
	lena := userKubeconfig(t, "lena")
	alice, err := versioned.NewForConfig(cp.FrontProxyConfig(replicas[0].URL, "alice", "sre"))
	if err != nil {
		t.Fatal(err)
	}
	newSession := func(name string) (*v1alpha1.Session, error) {
		return alice.ClustergateV1alpha1().Sessions(ns).Create(ctx, &v1alpha1.Session{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: 10 * time.Minute}, AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
				Target: v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: "local"}}},
		}, metav1.CreateOptions{})
	}
	if _, err := newSession("frozen"); err != nil {
		t.Fatal(err)
	}
	waitSessionReady(t, admin, ns, "frozen")
	proxied := func(url string) kubernetes.Interface {
		cfg := cp.FrontProxyConfig(url, "alice", "sre")
		cfg.Host += v1alpha1.ProxyEndpoint(ns, "frozen")
		// JSON, so that a watch the lock cuts ends with an ERROR event
		// saying why.
		cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
		k, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	targets := []kubernetes.Interface{proxied(replicas[0].URL), proxied(replicas[1].URL), proxied(cp.ClustergateURL)}
	for i, k := range targets {
		if _, err := k.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("replica %d before the lock: %v", i+1, err)
		}
	}

	// A watch on each extra replica; each reports when it ended and its
	// last event.
	type end struct {
		at   time.Time
		last watch.Event
	}
	streamCtx, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	ends := make([]chan end, 2)
	for i, k := range targets[:2] {
		w, err := k.CoreV1().ConfigMaps("default").Watch(streamCtx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = make(chan end, 1)
		go func() {
			var last watch.Event
			for ev := range w.ResultChan() {
				last = ev
			}
			ends[i] <- end{at: time.Now(), last: last}
		}()
	}
	time.Sleep(time.Second)
	for i, e := range ends {
		select {
		case got := <-e:
			t.Fatalf("the watch on replica %d ended before the lock: %+v", i+1, got.last)
		default:
		}
	}

	t.Run("session user may not lock", func(t *testing.T) {
		aliceKubeconfig := userKubeconfig(t, "alice", "sre")
		refused(t, aliceKubeconfig, ns, "forbidden", "lock", "--user", "alice", "--reason", "mine")
	})
	t.Run("a lock without a reason is 422", func(t *testing.T) {
		_, err := admin.ClustergateV1alpha1().SessionLocks().Create(ctx, &v1alpha1.SessionLock{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"}, Spec: v1alpha1.SessionLockSpec{User: "alice"}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.reason: Required value") {
			t.Errorf("got %v, want 422 with spec.reason", err)
		}
		refused(t, lena, ns, "spec.reason: Required value", "lock", "--user", "alice")
	})

	// lena locks alice in this namespace only: other tests' sessions and
	// namespaces stay untouched. The lock is created with the clientset,
	// not the plugin, so that the cut is timed from the request: from its
	// start, an upper bound (a replica may cut before the answer comes).
	lenaClient, err := versioned.NewForConfig(cp.FrontProxyConfig(cp.ClustergateURL, "lena"))
	if err != nil {
		t.Fatal(err)
	}
	locking := time.Now()
	lock, err := lenaClient.ClustergateV1alpha1().SessionLocks().Create(ctx, &v1alpha1.SessionLock{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"},
		Spec:       v1alpha1.SessionLockSpec{User: "alice", Namespace: ns, Reason: lockReason},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	lockName := lock.Name
	t.Cleanup(func() { _ = admin.ClustergateV1alpha1().SessionLocks().Delete(ctx, lockName, metav1.DeleteOptions{}) })
	t.Logf("creating lock %s took %s", lockName, created.Sub(locking).Round(time.Millisecond))
	want := "locked by SessionLock " + lockName + ": " + lockReason
	for i, e := range ends {
		select {
		case got := <-e:
			delay := got.at.Sub(locking)
			t.Logf("replica %d: watch ended %s after the lock's create was sent (%s after it was answered); last event %s", i+1,
				delay.Round(time.Millisecond), got.at.Sub(created).Round(time.Millisecond), describeEvent(got.last))
			if delay > time.Second {
				t.Errorf("replica %d: watch ended %s after the lock, want within 1s", i+1, delay)
			}
			if !strings.Contains(describeEvent(got.last), want) {
				t.Errorf("replica %d: last event %s, want an ERROR saying %q", i+1, describeEvent(got.last), want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("replica %d: the watch still runs 5s after the lock", i+1)
		}
	}

	t.Run("new requests are refused naming the lock", func(t *testing.T) {
		for i, k := range targets {
			_, err := k.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("replica %d: %v, want 403 saying %q", i+1, err, want)
			}
		}
	})
	t.Run("new sessions and extensions are refused naming the lock", func(t *testing.T) {
		_, err := newSession("another")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("new session: %v, want 403 saying %q", err, want)
		}
		s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "frozen", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = extendTo(alice, ns, "frozen", s.Status.ExpiresAt.Add(time.Minute))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("extension: %v, want 403 saying %q", err, want)
		}
	})
	t.Run("the session shows Locked", func(t *testing.T) {
		eventually(t, 10*time.Second, "Ready=False, reason Locked", func() error {
			s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "frozen", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); ready == nil ||
				ready.Reason != v1alpha1.SessionReasonLocked || ready.Message != want {
				return fmt.Errorf("Ready %+v", ready)
			}
			return nil
		})
		eventually(t, 10*time.Second, "a Locked event", func() error {
			events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=frozen,reason=Locked"})
			if err != nil {
				return err
			}
			if len(events.Items) == 0 {
				return fmt.Errorf("no event with reason Locked")
			}
			t.Logf("event: %s", events.Items[0].Message)
			return nil
		})
		aliceKubeconfig := userKubeconfig(t, "alice", "sre")
		out := mustSession(t, aliceKubeconfig, ns, "Locked", "list")
		if fields := strings.Fields(strings.Split(out, "\n")[1]); len(fields) < 6 || fields[0] != "frozen" || fields[5] != "Locked" {
			t.Errorf("kubectl session list shows no READY Locked for frozen:\n%s", out)
		}
		mustSession(t, lena, ns, lockReason, "locks")
	})

	// The plugin as lena: a second lock it prints the name of, then
	// unlock removes both.
	second := strings.TrimSpace(mustSession(t, lena, ns, "lock-", "lock", "--user", "alice", "-n", ns, "--reason", lockReason, "--ttl", "1h"))
	if _, err := admin.ClustergateV1alpha1().SessionLocks().Get(ctx, second, metav1.GetOptions{}); err != nil {
		t.Fatalf("kubectl session lock printed %q: %v", second, err)
	}
	mustSession(t, lena, ns, "sessionlock "+second+" removed", "unlock", lockName, second)
	unlocked := time.Now()
	t.Run("after unlock the same session works again", func(t *testing.T) {
		eventually(t, 10*time.Second, "Ready again", func() error {
			s, err := admin.ClustergateV1alpha1().Sessions(ns).Get(ctx, "frozen", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady) {
				return fmt.Errorf("conditions %+v", s.Status.Conditions)
			}
			return nil
		})
		t.Logf("Ready again %s after unlock", time.Since(unlocked).Round(time.Millisecond))
		for i, k := range targets {
			eventually(t, 5*time.Second, fmt.Sprintf("replica %d serves again", i+1), func() error {
				_, err := k.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
				return err
			})
		}
		if _, err := extendTo(alice, ns, "frozen", time.Now().Add(11*time.Minute)); err != nil {
			t.Errorf("extension after unlock: %v", err)
		}
		eventually(t, 10*time.Second, "an Unlocked event", func() error {
			events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=frozen,reason=Unlocked"})
			if err != nil {
				return err
			}
			if len(events.Items) == 0 {
				return fmt.Errorf("no event with reason Unlocked")
			}
			return nil
		})
	})
}

// lockRetention is how long the shared plane keeps expired SessionLocks.
const lockRetention = 5 * time.Second

// TestExpiredLockRemoved: a lock that expired stays listed as Expired for
// the retention, then the leader deletes it.
func TestExpiredLockRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, admin := clients(t)
	expiresAt := time.Now().Add(2 * time.Second)
	l, err := admin.ClustergateV1alpha1().SessionLocks().Create(ctx, &v1alpha1.SessionLock{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"},
		Spec: v1alpha1.SessionLockSpec{User: "nobody-expiring", Reason: "INC-4243 drill",
			ExpiresAt: &metav1.Time{Time: expiresAt}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.ClustergateV1alpha1().SessionLocks().Delete(ctx, l.Name, metav1.DeleteOptions{})
	})
	// The API keeps seconds: the lock's expiry is the stored one.
	expiresAt = l.Spec.ExpiresAt.Time
	time.Sleep(time.Until(expiresAt.Add(time.Second)))
	if out := kubectl(t, "get", "sessionlock", l.Name); !strings.Contains(out, "Expired") {
		t.Errorf("a second after its expiry the lock is not listed as Expired:\n%s", out)
	}
	eventually(t, lockRetention+15*time.Second, "the expired lock deleted", func() error {
		_, err := admin.ClustergateV1alpha1().SessionLocks().Get(ctx, l.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
	gone := time.Since(expiresAt)
	t.Logf("deleted %s after its expiry (retention %s)", gone.Round(100*time.Millisecond), lockRetention)
	if gone < lockRetention {
		t.Errorf("deleted %s after its expiry, before the retention of %s ended", gone, lockRetention)
	}
}

// describeEvent prints a watch event, with the message of an ERROR's Status.
func describeEvent(ev watch.Event) string {
	if status, ok := ev.Object.(*metav1.Status); ok {
		return fmt.Sprintf("%s %d %s", ev.Type, status.Code, status.Message)
	}
	return string(ev.Type)
}
