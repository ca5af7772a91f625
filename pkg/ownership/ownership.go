// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ownership decides whether a user is the owner of a session. The
// proxy, the owner-only changes and deletes, and nothing else depend on it,
// so they cannot disagree about who the owner is.
package ownership

import (
	"crypto/subtle"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// Is reports whether u is the session owner o: the same user name and, when
// the owner has a UID, the same UID. A user who was deleted and created again
// under the same name gets a new UID and so does not own the old sessions.
// Both parts are compared in constant time and both are always compared, so
// that timing tells nothing about the owner's name or UID.
func Is(u user.Info, o clustergate.SessionOwner) bool {
	// A session without an owner's name belongs to nobody.
	if u == nil || o.Username == "" {
		return false
	}
	name := subtle.ConstantTimeCompare([]byte(u.GetName()), []byte(o.Username))
	uid := 1
	if o.UID != "" {
		uid = subtle.ConstantTimeCompare([]byte(u.GetUID()), []byte(o.UID))
	}
	return name&uid == 1
}
