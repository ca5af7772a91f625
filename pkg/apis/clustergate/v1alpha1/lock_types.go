// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionLock freezes the sessions it matches, for an incident: while it is
// in force, a matching session cannot be created or extended, every request
// and stream through its proxy ends within a second on every replica and
// new ones are refused; the sessions stay, Ready=False with reason Locked,
// and work again once the lock is deleted or expires before they do. A lock
// on a Shoot target that names no user or group also holds the
// GardenerClusterKubeconfigs of that Shoot: no kubeconfig is written for
// them (state Locked) until it goes. Cluster-scoped.
type SessionLock struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec says which sessions the lock matches, why and until when.
	Spec SessionLockSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// SessionLockSpec says which sessions a lock matches, why and until when.
// Every member given must match: they combine with AND, so that
// {user: alice, target: {shoot: {name: prod}}} locks alice's sessions to
// prod only. At least one of user, users, group, target and namespace is
// given.
type SessionLockSpec struct {
	// User matches sessions whose owner (spec.owner.username) is this user,
	// and requests through them by this user. Together with users it names
	// one person: any of the names matches.
	// +optional
	User string `json:"user,omitempty" protobuf:"bytes,1,opt,name=user"`
	// Users are more user names of the same person, matched as user is: a
	// person has a garden name and a name in each data-plane identity space
	// (with its issuer's prefix, such as dataplane:alice@example.com), and
	// sessions opened under either are theirs. At most 16, none empty.
	// +optional
	// +listType=set
	Users []string `json:"users,omitempty" protobuf:"bytes,7,rep,name=users"`
	// Group matches sessions whose owner had this group when the session
	// was created (spec.owner.groups), and every request through any
	// session whose requester is in this group now (the groups of the
	// request's authenticated user, or of the data plane's verified token):
	// a session assigned with fewer groups than its owner has does not
	// escape it.
	// +optional
	Group string `json:"group,omitempty" protobuf:"bytes,2,opt,name=group"`
	// Target matches sessions to this shoot or cluster.
	// +optional
	Target *SessionLockTarget `json:"target,omitempty" protobuf:"bytes,3,opt,name=target"`
	// Namespace matches sessions in this namespace.
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,4,opt,name=namespace"`
	// Reason is why the lock is in force, such as an incident; required, at
	// most 512 characters. Refusals name the lock and its reason.
	Reason string `json:"reason" protobuf:"bytes,5,opt,name=reason"`
	// ExpiresAt ends the lock: from then on it matches nothing, as if
	// deleted (expired locks are kept until deleted). Unset, the lock holds
	// until it is deleted.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty" protobuf:"bytes,6,opt,name=expiresAt"`
}

// SessionLockTarget names a target as sessions name it: exactly one member
// is set.
// +union
type SessionLockTarget struct {
	// Shoot is a Gardener Shoot, by name and, if given, project, as in a
	// session's spec.target.shoot.
	// +optional
	Shoot *ShootReference `json:"shoot,omitempty" protobuf:"bytes,1,opt,name=shoot"`
	// Cluster is a cluster target, by the name of its kubeconfig Secret, as
	// in a session's spec.target.cluster.kubeconfigSecretRef.
	// +optional
	Cluster *LocalSecretReference `json:"cluster,omitempty" protobuf:"bytes,2,opt,name=cluster"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SessionLockList is a list of SessionLocks.
type SessionLockList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the SessionLocks.
	Items []SessionLock `json:"items" protobuf:"bytes,2,rep,name=items"`
}
