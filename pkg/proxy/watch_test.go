// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
	"github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
)

func session(name string, ready metav1.ConditionStatus, deleting bool) *v1alpha1.Session {
	s := &v1alpha1.Session{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sre", UID: types.UID(name)}}
	s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: ready, Reason: "Test"}}
	if deleting {
		s.DeletionTimestamp = &metav1.Time{Time: start}
		s.Finalizers = []string{"clustergate.dev/credentials"}
	}
	return s
}

// TestEndWithSessions drives the tracker from a sessions informer: each
// step updates a session and says whether a new connection is refused, and
// why.
func TestEndWithSessions(t *testing.T) {
	client := fake.NewSimpleClientset(session("deleting", metav1.ConditionTrue, true), session("s1", metav1.ConditionTrue, false))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	r := NewTracker(clock.RealClock{}, Limits{})
	forgotten := make(chan types.UID, 10)
	informer := factory.Clustergate().V1alpha1().Sessions().Informer()
	must(t, r.EndWithSessions(informer, func(uid types.UID) { forgotten <- uid }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	sessions := client.ClustergateV1alpha1().Sessions("sre")
	steps := []struct {
		name   string
		update func() error
		uid    types.UID
		want   error
	}{
		{name: "being deleted at the first list", update: func() error { return nil }, uid: "deleting", want: ErrDeleted},
		{name: "ready", update: func() error { return nil }, uid: "s1"},
		{name: "no longer ready", uid: "s1", want: ErrNotReady, update: func() error {
			_, err := sessions.UpdateStatus(context.Background(), session("s1", metav1.ConditionFalse, false), metav1.UpdateOptions{})
			return err
		}},
		{name: "ready again", uid: "s1", update: func() error {
			_, err := sessions.UpdateStatus(context.Background(), session("s1", metav1.ConditionTrue, false), metav1.UpdateOptions{})
			return err
		}},
		{name: "deleted", uid: "s1", want: ErrDeleted, update: func() error {
			return sessions.Delete(context.Background(), "s1", metav1.DeleteOptions{})
		}},
	}
	for _, step := range steps {
		must(t, step.update())
		var got error
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			_, release, err := r.Open(context.Background(), step.uid, "alice", time.Now().Add(time.Hour))
			if err == nil {
				release()
			}
			got = err
			return errors.Is(err, step.want) || (step.want == nil && err == nil), nil
		}); err != nil {
			t.Errorf("%s: open gives %v, want %v", step.name, got, step.want)
		}
	}
	select {
	case uid := <-forgotten:
		if uid != "s1" {
			t.Errorf("forgot %s, want s1", uid)
		}
	case <-time.After(5 * time.Second):
		t.Error("the deleted session's credentials were not forgotten")
	}
}
