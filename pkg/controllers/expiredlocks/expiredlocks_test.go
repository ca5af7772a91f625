// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package expiredlocks

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllertest"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/fake"
	"github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
)

func TestSync(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const retention = 24 * time.Hour
	lock := func(expiresAt *time.Time) *v1alpha1.SessionLock {
		l := &v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "lock-1", UID: "u1", ResourceVersion: "7"},
			Spec: v1alpha1.SessionLockSpec{User: "mallory", Reason: "INC-4711"}}
		if expiresAt != nil {
			l.Spec.ExpiresAt = &metav1.Time{Time: *expiresAt}
		}
		return l
	}
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	tests := []struct {
		name        string
		lock        *v1alpha1.SessionLock
		wantRequeue time.Duration
		wantWrites  []string
	}{
		{name: "no expiry: kept", lock: lock(nil)},
		{name: "still holding: looked at again when its retention ends", lock: lock(at(time.Hour)), wantRequeue: time.Hour + retention},
		{name: "expired within the retention: kept until it ends", lock: lock(at(-time.Hour)), wantRequeue: retention - time.Hour},
		{name: "expired longer ago than the retention: deleted", lock: lock(at(-retention - time.Second)),
			wantWrites: []string{"delete sessionlocks"}},
		{name: "gone already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.lock != nil {
				client = fake.NewClientset(tt.lock)
			}
			factory := externalversions.NewSharedInformerFactory(client, 0)
			informer := factory.Clustergate().V1alpha1().SessionLocks()
			if tt.lock != nil {
				if err := informer.Informer().GetIndexer().Add(tt.lock); err != nil {
					t.Fatal(err)
				}
			}
			c, err := New(retention, client, informer, clocktesting.NewFakeClock(now))
			if err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			result, err := c.sync(context.Background(), types.NamespacedName{Name: "lock-1"})
			if err != nil {
				t.Fatal(err)
			}
			if result.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", result.RequeueAfter, tt.wantRequeue)
			}
			if got := controllertest.Writes(client.Actions()); !slices.Equal(got, tt.wantWrites) {
				t.Errorf("writes %v, want %v", got, tt.wantWrites)
			}
			// A lock given a later expiry since the cache saw it must
			// survive: the delete holds to the version read.
			for _, a := range client.Actions() {
				if d, ok := a.(clienttesting.DeleteAction); ok {
					p := d.GetDeleteOptions().Preconditions
					if p == nil || p.UID == nil || *p.UID != tt.lock.UID || p.ResourceVersion == nil || *p.ResourceVersion != tt.lock.ResourceVersion {
						t.Errorf("delete preconditions %+v, want the UID and resourceVersion read", p)
					}
				}
			}
		})
	}
}
