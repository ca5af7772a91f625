// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package gardenerclusterkubeconfigs

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/gardener"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

var (
	cfg = Config{RotationRatio: 0.6, ConflictRecheck: 5 * time.Minute, GardenerRetry: 5 * time.Minute}
	// synced is when the test Secret's kubeconfig was written; it is valid 24h.
	synced = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
)

func object(mutate ...func(*v1alpha1.GardenerClusterKubeconfig)) *v1alpha1.GardenerClusterKubeconfig {
	o := &v1alpha1.GardenerClusterKubeconfig{
		ObjectMeta: metav1.ObjectMeta{Name: "c-123", Namespace: "kcp", UID: "uid-1", ResourceVersion: "7", Generation: 1,
			Labels: map[string]string{"kyma-project.io/runtime-id": "r-1"}, Finalizers: []string{v1alpha1.KubeconfigFinalizer}},
		Spec: v1alpha1.GardenerClusterKubeconfigSpec{
			Shoot:      v1alpha1.ShootReference{Name: "c-123"},
			Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Name: "kubeconfig-c-123", Namespace: "kcp", Key: "config"}},
		},
	}
	for _, m := range mutate {
		m(o)
	}
	return o
}

func secret(mutate ...func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-c-123", Namespace: "kcp",
			Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: "c-123", "kyma-project.io/runtime-id": "r-1"},
			Annotations: map[string]string{
				v1alpha1.AnnotationLastSync:  synced.Format(time.RFC3339),
				v1alpha1.AnnotationExpiresAt: synced.Add(24 * time.Hour).Format(time.RFC3339),
				v1alpha1.AnnotationChecksum:  Checksum([]byte(testKubeconfig)),
				v1alpha1.AnnotationReason:    v1alpha1.KubeconfigReasonCreated,
			}},
		Data: map[string][]byte{"config": []byte(testKubeconfig)},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// ready is an object whose status matches the test Secret.
func ready(o *v1alpha1.GardenerClusterKubeconfig) {
	lastSync, expires := metav1.NewTime(synced), metav1.NewTime(synced.Add(24*time.Hour))
	o.Status = v1alpha1.GardenerClusterKubeconfigStatus{State: v1alpha1.KubeconfigStateReady, LastSyncTime: &lastSync,
		ExpirationTime: &expires, ObservedGeneration: 1}
	meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.KubeconfigConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.KubeconfigReasonCreated, Message: "Secret kubeconfig-c-123 holds a kubeconfig valid until 2026-12-01T00:00:00Z"})
}

func TestNextAction(t *testing.T) {
	clock := clocktesting.NewFakeClock(synced.Add(time.Hour))
	rotateAt := RotationTime(synced, synced.Add(24*time.Hour), cfg)
	deleted := func(o *v1alpha1.GardenerClusterKubeconfig) {
		now := metav1.NewTime(clock.Now())
		o.DeletionTimestamp = &now
	}
	lastSync, expires := metav1.NewTime(synced), metav1.NewTime(synced.Add(24*time.Hour))
	failed := func(reason gardener.Reason, ago time.Duration, count int) *controllerutil.Failure {
		return &controllerutil.Failure{Reason: string(reason), Message: "requesting a kubeconfig: " + string(reason),
			At: clock.Now().Add(-ago), Count: count}
	}
	failedStatus := func(reason gardener.Reason) *Status {
		return &Status{State: v1alpha1.KubeconfigStateError, Reason: string(reason), Message: "requesting a kubeconfig: " + string(reason), ObservedGeneration: 1}
	}

	tests := []struct {
		name   string
		obs    Observed
		now    time.Time
		expect Action
	}{
		{name: "new object gets the finalizer first",
			obs:    Observed{Object: object(func(o *v1alpha1.GardenerClusterKubeconfig) { o.Finalizers = nil })},
			expect: Action{Type: AddFinalizer}},
		{name: "no Secret: create it",
			obs:    Observed{Object: object()},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonCreated, Create: true}},
		{name: "Gardener failed a moment ago: the failure is the status, retried in a second",
			obs:    Observed{Object: object(), Failure: failed(gardener.GardenerUnavailable, 0, 1)},
			expect: Action{Type: UpdateStatus, RequeueAfter: time.Second, Status: failedStatus(gardener.GardenerUnavailable)}},
		{name: "Gardener failed five times in a row: backs off",
			obs:    Observed{Object: object(), Failure: failed(gardener.GardenerUnavailable, 6*time.Second, 5)},
			expect: Action{Type: UpdateStatus, RequeueAfter: 10 * time.Second, Status: failedStatus(gardener.GardenerUnavailable)}},
		{name: "Gardener failed, retry due: ask again",
			obs:    Observed{Object: object(), Failure: failed(gardener.GardenerUnavailable, 2*time.Second, 1)},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonCreated, Create: true}},
		{name: "shoot not found: looked for again after GardenerRetry",
			obs:    Observed{Object: object(), Failure: failed(gardener.ShootNotFound, time.Minute, 1)},
			expect: Action{Type: UpdateStatus, RequeueAfter: 4 * time.Minute, Status: failedStatus(gardener.ShootNotFound)}},
		{name: "a failure does not hold up anything but the write",
			obs:    Observed{Object: object(func(o *v1alpha1.GardenerClusterKubeconfig) { o.Finalizers = nil }), Failure: failed(gardener.Forbidden, 0, 1)},
			expect: Action{Type: AddFinalizer}},
		{name: "Secret deleted after it was synced: repair",
			obs:    Observed{Object: object(ready)},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRepaired, Create: true}},
		{name: "fresh Secret, stale status: write status",
			obs: Observed{Object: object(), Secret: secret()},
			expect: Action{Type: UpdateStatus, RequeueAfter: rotateAt.Sub(clock.Now()), Status: &Status{
				State: v1alpha1.KubeconfigStateReady, Reason: v1alpha1.KubeconfigReasonCreated, LastSyncTime: &lastSync, ExpirationTime: &expires, ObservedGeneration: 1,
				Message: "Secret kubeconfig-c-123 holds a kubeconfig valid until 2026-12-01T00:00:00Z"}}},
		{name: "all in order: nothing until the rotation is due",
			obs:    Observed{Object: object(ready), Secret: secret()},
			expect: Action{Type: None, RequeueAfter: rotateAt.Sub(clock.Now())}},
		{name: "rotation due",
			obs: Observed{Object: object(ready), Secret: secret()}, now: rotateAt,
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRotated}},
		{name: "a second before the rotation: nothing",
			obs: Observed{Object: object(ready), Secret: secret()}, now: rotateAt.Add(-time.Second),
			expect: Action{Type: None, RequeueAfter: time.Second}},
		{name: "kubeconfig edited: repair",
			obs:    Observed{Object: object(ready), Secret: secret(func(s *corev1.Secret) { s.Data["config"] = []byte("edited") })},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRepaired}},
		{name: "kubeconfig removed from the Secret: repair",
			obs:    Observed{Object: object(ready), Secret: secret(func(s *corev1.Secret) { delete(s.Data, "config") })},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRepaired}},
		{name: "expiry record lost: repair",
			obs:    Observed{Object: object(ready), Secret: secret(func(s *corev1.Secret) { delete(s.Annotations, v1alpha1.AnnotationExpiresAt) })},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRepaired}},
		{name: "force on the Secret",
			obs:    Observed{Object: object(ready), Secret: secret(func(s *corev1.Secret) { s.Annotations[v1alpha1.AnnotationForceRotation] = "true" })},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonForced}},
		{name: "force on the object",
			obs: Observed{Object: object(ready, func(o *v1alpha1.GardenerClusterKubeconfig) {
				o.Annotations = map[string]string{v1alpha1.AnnotationForceRotationShort: "true"}
			}), Secret: secret()},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonForced, ForcedBy: "7"}},
		{name: "force on the object honoured: remove the annotation",
			obs: Observed{Object: object(ready, func(o *v1alpha1.GardenerClusterKubeconfig) {
				o.Annotations = map[string]string{v1alpha1.AnnotationForceRotation: "true"}
			}), Secret: secret(func(s *corev1.Secret) { s.Annotations[v1alpha1.AnnotationForcedBy] = "7" })},
			expect: Action{Type: RemoveForceAnnotation}},
		{name: "object label added: copy it to the Secret without a new kubeconfig",
			obs: Observed{Object: object(ready, func(o *v1alpha1.GardenerClusterKubeconfig) { o.Labels["team"] = "a" }),
				Secret: secret()},
			expect: Action{Type: SyncSecretMetadata}},
		{name: "foreign Secret: conflict, left untouched",
			obs: Observed{Object: object(), Secret: secret(func(s *corev1.Secret) { s.Labels = nil })},
			expect: Action{Type: UpdateStatus, RequeueAfter: 5 * time.Minute, Status: &Status{
				State: v1alpha1.KubeconfigStateError, Reason: v1alpha1.KubeconfigReasonSecretConflict, ObservedGeneration: 1,
				Message: "Secret kcp/kubeconfig-c-123 exists and is not managed by this object; it is left untouched"}}},
		{name: "Secret of another clustergate object: conflict",
			obs: Observed{Object: object(), Secret: secret(func(s *corev1.Secret) { s.Labels[v1alpha1.LabelClusterName] = "other" })},
			expect: Action{Type: UpdateStatus, RequeueAfter: 5 * time.Minute, Status: &Status{
				State: v1alpha1.KubeconfigStateError, Reason: v1alpha1.KubeconfigReasonSecretConflict, ObservedGeneration: 1,
				Message: "Secret kcp/kubeconfig-c-123 exists and is not managed by this object; it is left untouched"}}},
		{name: "Kyma's Secret for the same object: adopt",
			obs: Observed{Object: object(), Secret: secret(func(s *corev1.Secret) {
				s.Labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByKyma
				s.Annotations = map[string]string{v1alpha1.AnnotationLastSync: "2026-11-29T00:00:00Z"}
			})},
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonAdopted}},
		{name: "Secret moved: the old one is deleted",
			obs:    Observed{Object: object(ready), Secret: secret(), Stale: []*corev1.Secret{secret(func(s *corev1.Secret) { s.Name = "old" })}},
			expect: Action{Type: DeleteSecret, SecretName: "old"}},
		{name: "deleted: Secret first",
			obs:    Observed{Object: object(ready, deleted), Secret: secret()},
			expect: Action{Type: DeleteSecret, SecretName: "kubeconfig-c-123"}},
		{name: "deleted with a foreign Secret: release without touching it",
			obs:    Observed{Object: object(ready, deleted), Secret: secret(func(s *corev1.Secret) { s.Labels = nil })},
			expect: Action{Type: RemoveFinalizer}},
		{name: "deleted, Secret gone: release",
			obs:    Observed{Object: object(ready, deleted)},
			expect: Action{Type: RemoveFinalizer}},
		{name: "deleted and released: nothing",
			obs:    Observed{Object: object(deleted, func(o *v1alpha1.GardenerClusterKubeconfig) { o.Finalizers = nil })},
			expect: Action{Type: None}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := clock.Now()
			if !tt.now.IsZero() {
				now = tt.now
			}
			tt.obs.Now = now
			if diff := cmp.Diff(tt.expect, NextAction(tt.obs, cfg)); diff != "" {
				t.Errorf("action (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNextActionOnlyReads: NextAction takes no rotation slot; the pass that
// observes the object does (reserveRotation). Asked twice, it answers the
// same, starts the rotation at the reserved slot when there is one, and
// leaves the schedule as it was.
func TestNextActionOnlyReads(t *testing.T) {
	now := synced.Add(time.Hour)
	tests := []struct {
		name     string
		reserve  bool
		wantHeld int
	}{
		{name: "observed without a reservation: rotates at the due time"},
		{name: "observed with its slot reserved", reserve: true, wantHeld: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paced := cfg
			paced.Schedule = NewSchedule(1, time.Minute)
			o := Observed{Object: object(ready), Secret: secret(), Now: now}
			start := RotationTime(synced, synced.Add(24*time.Hour), cfg)
			if tt.reserve {
				o.RotateAt = reserveRotation(o, paced)
				start = o.RotateAt
			}
			slots, held := maps.Clone(paced.Schedule.slots), maps.Clone(paced.Schedule.held)

			first, second := NextAction(o, paced), NextAction(o, paced)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("second answer differs (-first +second):\n%s", diff)
			}
			if want := (Action{Type: None, RequeueAfter: paced.Schedule.Wait(start, now)}); !cmp.Equal(first, want) {
				t.Errorf("action = %+v, want %+v", first, want)
			}
			if !maps.Equal(slots, paced.Schedule.slots) || !maps.Equal(held, paced.Schedule.held) {
				t.Errorf("NextAction changed the schedule: slots %v → %v, held %v → %v", slots, paced.Schedule.slots, held, paced.Schedule.held)
			}
			if len(paced.Schedule.held) != tt.wantHeld {
				t.Errorf("%d slots held, want %d", len(paced.Schedule.held), tt.wantHeld)
			}
		})
	}
}

func TestSecretLabels(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{name: "no labels", want: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: "c-1"}},
		{name: "the object's labels are copied",
			labels: map[string]string{"kyma-project.io/runtime-id": "c-1"},
			want:   map[string]string{"kyma-project.io/runtime-id": "c-1", v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: "c-1"}},
		{name: "but never the mark of a cluster target",
			labels: map[string]string{v1alpha1.LabelClusterTarget: "true"},
			want:   map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: "c-1"}},
		{name: "and managed-by is the server's",
			labels: map[string]string{v1alpha1.LabelManagedBy: "someone"},
			want:   map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByClustergate, v1alpha1.LabelClusterName: "c-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &v1alpha1.GardenerClusterKubeconfig{ObjectMeta: metav1.ObjectMeta{Name: "c-1", Labels: tt.labels}}
			if diff := cmp.Diff(tt.want, SecretLabels(obj)); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNextActionLocked: while a SessionLock on the Shoot holds the object,
// no kubeconfig is written for any reason, the status says so, and the
// Secret's kubeconfig is left to expire; deletion and clean-up go on.
func TestNextActionLocked(t *testing.T) {
	now := synced.Add(time.Hour)
	rotateAt := RotationTime(synced, synced.Add(24*time.Hour), cfg)
	lastSync, expires := metav1.NewTime(synced), metav1.NewTime(synced.Add(24*time.Hour))
	lockExpiry := metav1.NewTime(now.Add(2 * time.Hour))
	lock := &v1alpha1.SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc"},
		Spec: v1alpha1.SessionLockSpec{Target: &v1alpha1.SessionLockTarget{Shoot: &v1alpha1.ShootReference{Name: "c-123"}}, Reason: "INC-9"}}
	expiring := lock.DeepCopy()
	expiring.Spec.ExpiresAt = &lockExpiry
	const (
		held       = "locked by SessionLock inc: INC-9: no kubeconfig is written for shoot c-123 while it holds"
		heldSecret = held + "; the kubeconfig in Secret kubeconfig-c-123 stays valid until 2026-12-01T00:00:00Z and is not renewed"
	)
	lockedStatus := func(msg string, synced bool) *Status {
		s := &Status{State: v1alpha1.KubeconfigStateLocked, Reason: v1alpha1.KubeconfigReasonLocked, Message: msg, ObservedGeneration: 1}
		if synced {
			s.LastSyncTime, s.ExpirationTime = &lastSync, &expires
		}
		return s
	}
	locked := func(msg string) func(*v1alpha1.GardenerClusterKubeconfig) {
		return func(o *v1alpha1.GardenerClusterKubeconfig) {
			ready(o)
			o.Status.State = v1alpha1.KubeconfigStateLocked
			meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.KubeconfigConditionReady, Status: metav1.ConditionFalse,
				Reason: v1alpha1.KubeconfigReasonLocked, Message: msg})
		}
	}
	tests := []struct {
		name   string
		obs    Observed
		now    time.Time
		expect Action
	}{
		{name: "no Secret: none created",
			obs: Observed{Object: object(), Lock: lock},
			expect: Action{Type: UpdateStatus, Status: lockedStatus(held, false),
				Event: v1alpha1.KubeconfigReasonLocked, EventMessage: "Shoot " + held}},
		{name: "rotation due: not rotated, the kubeconfig expires",
			obs: Observed{Object: object(ready), Secret: secret(), Lock: lock}, now: rotateAt,
			expect: Action{Type: UpdateStatus, Status: lockedStatus(heldSecret, true),
				Event: v1alpha1.KubeconfigReasonLocked, EventMessage: "Shoot " + heldSecret}},
		{name: "forced rotation: not honoured while locked",
			obs: Observed{Object: object(locked(heldSecret), func(o *v1alpha1.GardenerClusterKubeconfig) {
				o.Annotations = map[string]string{v1alpha1.AnnotationForceRotation: "true"}
			}), Secret: secret(), Lock: lock},
			expect: Action{Type: None}},
		{name: "kubeconfig edited: not repaired",
			obs:    Observed{Object: object(locked(held)), Secret: secret(func(s *corev1.Secret) { s.Data["config"] = []byte("edited") }), Lock: lock},
			expect: Action{Type: None}},
		{name: "kubeconfig expired: said no more",
			obs: Observed{Object: object(locked(heldSecret)), Secret: secret(), Lock: lock}, now: expires.Add(time.Minute),
			expect: Action{Type: UpdateStatus, Status: lockedStatus(held, true)}},
		{name: "a lock that expires: looked at again then",
			obs:    Observed{Object: object(locked(heldSecret)), Secret: secret(), Lock: expiring},
			expect: Action{Type: None, RequeueAfter: 2 * time.Hour}},
		{name: "Secret moved: the old one is still deleted",
			obs:    Observed{Object: object(ready), Secret: secret(), Stale: []*corev1.Secret{secret(func(s *corev1.Secret) { s.Name = "old" })}, Lock: lock},
			expect: Action{Type: DeleteSecret, SecretName: "old"}},
		{name: "deleted: its Secret is still deleted",
			obs:    Observed{Object: object(ready, deleted(now)), Secret: secret(), Lock: lock},
			expect: Action{Type: DeleteSecret, SecretName: "kubeconfig-c-123"}},
		{name: "lock gone: Ready again, said so",
			obs: Observed{Object: object(locked(heldSecret)), Secret: secret()},
			expect: Action{Type: UpdateStatus, RequeueAfter: rotateAt.Sub(now), Status: &Status{
				State: v1alpha1.KubeconfigStateReady, Reason: v1alpha1.KubeconfigReasonCreated, LastSyncTime: &lastSync, ExpirationTime: &expires, ObservedGeneration: 1,
				Message: "Secret kubeconfig-c-123 holds a kubeconfig valid until 2026-12-01T00:00:00Z"},
				Event: v1alpha1.KubeconfigReasonUnlocked, EventMessage: "No SessionLock holds shoot c-123 any more: kubeconfigs are written again"}},
		{name: "lock gone, rotation overdue: rotated",
			obs: Observed{Object: object(locked(heldSecret)), Secret: secret()}, now: rotateAt,
			expect: Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRotated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.Now = now
			if !tt.now.IsZero() {
				tt.obs.Now = tt.now
			}
			if diff := cmp.Diff(tt.expect, NextAction(tt.obs, cfg)); diff != "" {
				t.Errorf("action (-want +got):\n%s", diff)
			}
		})
	}
}

// deleted marks an object deleted at now.
func deleted(now time.Time) func(*v1alpha1.GardenerClusterKubeconfig) {
	return func(o *v1alpha1.GardenerClusterKubeconfig) {
		at := metav1.NewTime(now)
		o.DeletionTimestamp = &at
	}
}
