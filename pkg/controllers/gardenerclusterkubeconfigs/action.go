// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gardenerclusterkubeconfigs holds the controller that keeps the kubeconfig of every
// GardenerClusterKubeconfig in its Secret: created from Gardener, rotated
// before it expires or on demand, repaired when damaged and removed on
// delete.
//
// Each pass observes the object, reserving its rotation's slot in the
// Schedule, computes the single next action from what it observed
// (NextAction, a pure function tested as data) and performs it; state lives
// in the object and its Secret, so a crash between passes loses nothing.
package gardenerclusterkubeconfigs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/gardener"
)

// ActionType names what a pass does.
type ActionType string

// The actions a pass may take; each writes at most one object.
const (
	// None: nothing to do until RequeueAfter.
	None ActionType = "None"
	// AddFinalizer adds v1alpha1.KubeconfigFinalizer to the object.
	AddFinalizer ActionType = "AddFinalizer"
	// WriteKubeconfig asks Gardener for a kubeconfig and creates or updates
	// the Secret with it in one write.
	WriteKubeconfig ActionType = "WriteKubeconfig"
	// SyncSecretMetadata brings the Secret's labels in line without a new
	// kubeconfig.
	SyncSecretMetadata ActionType = "SyncSecretMetadata"
	// RemoveForceAnnotation removes an honoured force annotation from the object.
	RemoveForceAnnotation ActionType = "RemoveForceAnnotation"
	// UpdateStatus applies Status to the object's status.
	UpdateStatus ActionType = "UpdateStatus"
	// DeleteSecret deletes the managed Secret SecretName.
	DeleteSecret ActionType = "DeleteSecret"
	// RemoveFinalizer releases a deleted object.
	RemoveFinalizer ActionType = "RemoveFinalizer"
)

// Action is the single next step for one object.
type Action struct {
	Type ActionType
	// Reason says why a kubeconfig is written.
	Reason string
	// Create: WriteKubeconfig creates the Secret instead of updating it.
	Create bool
	// ForcedBy is recorded on the Secret when a force annotation on the
	// object is honoured.
	ForcedBy string
	// SecretName is the Secret DeleteSecret deletes.
	SecretName string
	// Status is what UpdateStatus applies.
	Status *Status
	// RequeueAfter is when to look again if nothing changes before.
	RequeueAfter time.Duration
	// Event, with EventMessage, is the event UpdateStatus records: a lock
	// that starts or stops holding the object.
	Event, EventMessage string
}

// Status is the status an UpdateStatus action applies.
type Status struct {
	State              v1alpha1.KubeconfigState
	Reason, Message    string
	LastSyncTime       *metav1.Time
	ExpirationTime     *metav1.Time
	ObservedGeneration int64
}

// Config holds the controller's timing.
type Config struct {
	// RotationRatio is the fraction of a kubeconfig's validity after which it
	// is rotated.
	RotationRatio float64
	// Schedule spreads rotations at Gardener's pace; nil rotates each at
	// its due time.
	Schedule *Schedule
	// ConflictRecheck is how often a Secret owned by someone else is looked
	// at again, besides its watched changes.
	ConflictRecheck time.Duration
	// GardenerRetry bounds the wait before Gardener is asked again after
	// failures in a row (from a second, doubling); a shoot that does not
	// exist is looked for again after this long.
	GardenerRetry time.Duration
}

// Observed is what a pass sees.
type Observed struct {
	// Object is the GardenerClusterKubeconfig.
	Object *v1alpha1.GardenerClusterKubeconfig
	// Secret is the Secret named in spec, or nil when there is none.
	Secret *corev1.Secret
	// Stale are other Secrets this controller manages for the object, left
	// behind when spec named another Secret.
	Stale []*corev1.Secret
	// Failure is the last failed request to Gardener for the object, until
	// a kubeconfig is written.
	Failure *controllerutil.Failure
	// Lock is the SessionLock on the object's Shoot that holds it, or nil
	// (v1alpha1.MatchingKubeconfigLock).
	Lock *v1alpha1.SessionLock
	// RotateAt is when the rotation of the kubeconfig in the object's own
	// Secret starts: its slot in Config.Schedule, reserved where the object
	// was observed (reserveRotation), so that NextAction only reads. Zero
	// rotates at the due time (RotationTime).
	RotateAt time.Time
	// Now is the current time.
	Now time.Time
}

// NextAction computes the single next step for an object. A kubeconfig
// that Gardener failed to issue is asked for again only once the retry is
// due; until then the failure is the object's status. While a SessionLock
// on the Shoot holds the object, no kubeconfig is written at all. It only
// reads: the rotation's slot was reserved when the object was observed.
func NextAction(o Observed, cfg Config) Action {
	a := nextAction(o, cfg)
	if o.Lock != nil && o.Object.DeletionTimestamp == nil {
		switch a.Type {
		case WriteKubeconfig, UpdateStatus, None:
			return lockedAction(o)
		}
		return a
	}
	if a.Type == UpdateStatus && o.Object.Status.State == v1alpha1.KubeconfigStateLocked && a.Status.State != v1alpha1.KubeconfigStateLocked {
		a.Event, a.EventMessage = v1alpha1.KubeconfigReasonUnlocked, "No SessionLock holds shoot "+shootName(o.Object)+" any more: kubeconfigs are written again"
	}
	f := o.Failure
	if a.Type != WriteKubeconfig || f == nil {
		return a
	}
	retry := f.RetryAt(time.Second, cfg.GardenerRetry)
	if f.Reason == string(gardener.ShootNotFound) || f.Reason == string(gardener.ProjectNotFound) {
		retry = f.At.Add(cfg.GardenerRetry)
	}
	if !o.Now.Before(retry) {
		return a
	}
	obj := o.Object
	return statusOr(o, &Status{State: v1alpha1.KubeconfigStateError, Reason: f.Reason, Message: f.Message,
		LastSyncTime: obj.Status.LastSyncTime, ExpirationTime: obj.Status.ExpirationTime, ObservedGeneration: obj.Generation},
		retry.Sub(o.Now))
}

func nextAction(o Observed, cfg Config) Action {
	obj, secret := o.Object, o.Secret
	if obj.DeletionTimestamp != nil {
		return nextDeletionAction(o)
	}
	if !hasFinalizer(obj) {
		return Action{Type: AddFinalizer}
	}
	if secret == nil {
		reason := v1alpha1.KubeconfigReasonCreated
		if obj.Status.LastSyncTime != nil {
			reason = v1alpha1.KubeconfigReasonRepaired
		}
		return Action{Type: WriteKubeconfig, Reason: reason, Create: true}
	}
	switch ownership(obj, secret) {
	case adoptable:
		return Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonAdopted}
	case foreign:
		msg := fmt.Sprintf("Secret %s/%s exists and is not managed by this object; it is left untouched", secret.Namespace, secret.Name)
		return statusOr(o, &Status{State: v1alpha1.KubeconfigStateError, Reason: v1alpha1.KubeconfigReasonSecretConflict, Message: msg,
			ObservedGeneration: obj.Generation, LastSyncTime: obj.Status.LastSyncTime, ExpirationTime: obj.Status.ExpirationTime},
			cfg.ConflictRecheck)
	}

	written, ok := readWritten(secret, obj.Spec.Kubeconfig.Secret.Key)
	if !ok {
		return Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRepaired}
	}
	if forceRequested(secret.Annotations) {
		return Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonForced}
	}
	if forceRequested(obj.Annotations) {
		if secret.Annotations[v1alpha1.AnnotationForcedBy] != obj.ResourceVersion {
			return Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonForced, ForcedBy: obj.ResourceVersion}
		}
		return Action{Type: RemoveForceAnnotation}
	}
	rotateAt := o.RotateAt
	if rotateAt.IsZero() {
		rotateAt = RotationTime(written.lastSync, written.expiresAt, cfg)
	}
	if !o.Now.Before(rotateAt) {
		return Action{Type: WriteKubeconfig, Reason: v1alpha1.KubeconfigReasonRotated}
	}
	if len(o.Stale) > 0 {
		return Action{Type: DeleteSecret, SecretName: o.Stale[0].Name}
	}
	if !labels.SelectorFromSet(SecretLabels(obj)).Matches(labels.Set(secret.Labels)) {
		return Action{Type: SyncSecretMetadata}
	}
	lastSync, expiresAt := metav1.NewTime(written.lastSync), metav1.NewTime(written.expiresAt)
	return statusOr(o, &Status{State: v1alpha1.KubeconfigStateReady, Reason: written.reason,
		Message:      fmt.Sprintf("Secret %s holds a kubeconfig valid until %s", secret.Name, written.expiresAt.UTC().Format(time.RFC3339)),
		LastSyncTime: &lastSync, ExpirationTime: &expiresAt, ObservedGeneration: obj.Generation},
		cfg.Schedule.Wait(rotateAt, o.Now))
}

// lockedAction is the status of an object a lock holds, instead of any
// kubeconfig written: a kubeconfig in a Secret cannot be revoked, but one
// that is not renewed expires, and no new one (created, repaired, forced
// or rotated) gives access to the Shoot while the lock holds. A forced
// rotation asked meanwhile is honoured once the lock goes. The next pass
// comes when the lock expires, or with the lock's change.
func lockedAction(o Observed) Action {
	obj, lock := o.Object, o.Lock
	msg := v1alpha1.LockMessage(lock.Name, lock.Spec.Reason) + ": no kubeconfig is written for shoot " + shootName(obj) + " while it holds"
	if o.Secret != nil && ownership(obj, o.Secret) == owned {
		if w, ok := readWritten(o.Secret, obj.Spec.Kubeconfig.Secret.Key); ok && o.Now.Before(w.expiresAt) {
			msg += fmt.Sprintf("; the kubeconfig in Secret %s stays valid until %s and is not renewed", o.Secret.Name, w.expiresAt.UTC().Format(time.RFC3339))
		}
	}
	var requeue time.Duration
	if at := lock.Spec.ExpiresAt; at != nil {
		requeue = max(at.Sub(o.Now), time.Millisecond)
	}
	a := statusOr(o, &Status{State: v1alpha1.KubeconfigStateLocked, Reason: v1alpha1.KubeconfigReasonLocked, Message: msg,
		LastSyncTime: obj.Status.LastSyncTime, ExpirationTime: obj.Status.ExpirationTime, ObservedGeneration: obj.Generation}, requeue)
	if a.Type == UpdateStatus && obj.Status.State != v1alpha1.KubeconfigStateLocked {
		a.Event, a.EventMessage = v1alpha1.KubeconfigReasonLocked, "Shoot "+msg
	}
	return a
}

func nextDeletionAction(o Observed) Action {
	if o.Secret != nil && ownership(o.Object, o.Secret) == owned {
		return Action{Type: DeleteSecret, SecretName: o.Secret.Name}
	}
	if len(o.Stale) > 0 {
		return Action{Type: DeleteSecret, SecretName: o.Stale[0].Name}
	}
	if hasFinalizer(o.Object) {
		return Action{Type: RemoveFinalizer}
	}
	return Action{Type: None}
}

// statusOr returns an UpdateStatus action when the object's status differs
// from want, and otherwise None until requeue.
func statusOr(o Observed, want *Status, requeue time.Duration) Action {
	s := o.Object.Status
	c := meta.FindStatusCondition(s.Conditions, v1alpha1.KubeconfigConditionReady)
	if s.State == want.State && s.ObservedGeneration == want.ObservedGeneration &&
		timesEqual(s.LastSyncTime, want.LastSyncTime) && timesEqual(s.ExpirationTime, want.ExpirationTime) &&
		c != nil && c.Reason == want.Reason && c.Message == want.Message {
		return Action{Type: None, RequeueAfter: requeue}
	}
	return Action{Type: UpdateStatus, Status: want, RequeueAfter: requeue}
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Truncate(time.Second).Equal(b.Time.Truncate(time.Second))
}

// reserveRotation reserves, in cfg.Schedule, the slot of the rotation of
// the kubeconfig in the object's own Secret and returns when the rotation
// starts; zero for an object being deleted or without a kubeconfig of its
// own to rotate. The pass that observes the object calls it, as the
// schedule's slots change with what is seen; NextAction reads its answer in
// Observed.RotateAt.
func reserveRotation(o Observed, cfg Config) time.Time {
	obj, secret := o.Object, o.Secret
	if obj.DeletionTimestamp != nil || secret == nil || ownership(obj, secret) != owned {
		return time.Time{}
	}
	written, ok := readWritten(secret, obj.Spec.Kubeconfig.Secret.Key)
	if !ok {
		return time.Time{}
	}
	return cfg.Schedule.RotateAt(obj.UID, written.lastSync, RotationTime(written.lastSync, written.expiresAt, cfg))
}

// RotationTime is when a kubeconfig written at lastSync and expiring at
// expiresAt is due for rotation: after RotationRatio of its validity. The
// Schedule may move it earlier, never later.
func RotationTime(lastSync, expiresAt time.Time, cfg Config) time.Time {
	return lastSync.Add(time.Duration(float64(expiresAt.Sub(lastSync)) * cfg.RotationRatio))
}

type ownershipKind int

const (
	owned ownershipKind = iota
	adoptable
	foreign
)

func ownership(obj *v1alpha1.GardenerClusterKubeconfig, s *corev1.Secret) ownershipKind {
	if s.Labels[v1alpha1.LabelClusterName] != obj.Name {
		return foreign
	}
	switch s.Labels[v1alpha1.LabelManagedBy] {
	case v1alpha1.ManagedByClustergate:
		return owned
	case v1alpha1.ManagedByKyma:
		return adoptable
	}
	return foreign
}

// written is what the Secret says about the kubeconfig in it.
type written struct {
	lastSync, expiresAt time.Time
	reason              string
}

// readWritten reads the kubeconfig's record from the Secret; ok is false
// when the Secret is damaged: kubeconfig missing, edited or unreadable, or
// its record missing.
func readWritten(s *corev1.Secret, key string) (written, bool) {
	if !intact(s, s.Data[key]) {
		return written{}, false
	}
	lastSync, err1 := time.Parse(time.RFC3339, s.Annotations[v1alpha1.AnnotationLastSync])
	expiresAt, err2 := time.Parse(time.RFC3339, s.Annotations[v1alpha1.AnnotationExpiresAt])
	if err1 != nil || err2 != nil || !expiresAt.After(lastSync) {
		return written{}, false
	}
	reason := s.Annotations[v1alpha1.AnnotationReason]
	if reason == "" {
		reason = v1alpha1.KubeconfigReasonCreated
	}
	return written{lastSync: lastSync, expiresAt: expiresAt, reason: reason}, true
}

// Checksum is the value of v1alpha1.AnnotationChecksum for a kubeconfig.
func Checksum(kubeconfig []byte) string {
	sum := sha256.Sum256(kubeconfig)
	return hex.EncodeToString(sum[:])
}

// SecretLabels are the labels a managed Secret carries: every label of the
// object but the mark of a cluster target, which would let sessions use the
// kept kubeconfig, and the managed-by and cluster-name labels.
func SecretLabels(obj *v1alpha1.GardenerClusterKubeconfig) map[string]string {
	labels := maps.Clone(obj.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	delete(labels, v1alpha1.LabelClusterTarget)
	labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByClustergate
	labels[v1alpha1.LabelClusterName] = obj.Name
	return labels
}

func forceRequested(annotations map[string]string) bool {
	_, long := annotations[v1alpha1.AnnotationForceRotation]
	_, short := annotations[v1alpha1.AnnotationForceRotationShort]
	return long || short
}

func hasFinalizer(obj *v1alpha1.GardenerClusterKubeconfig) bool {
	for _, f := range obj.Finalizers {
		if f == v1alpha1.KubeconfigFinalizer {
			return true
		}
	}
	return false
}

// shootName is the object's Shoot as messages name it, <project>/<name>.
func shootName(obj *v1alpha1.GardenerClusterKubeconfig) string {
	return v1alpha1.ShootTargetName(obj.Spec.Shoot.Project, obj.Spec.Shoot.Name)
}
