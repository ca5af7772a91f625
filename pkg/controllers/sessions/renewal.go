// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"time"

	"github.com/clustergate/clustergate/pkg/credentials"
)

// renewBefore is how long before its credentials expire a session that
// lasts longer (after an extension, or with a target's signer that caps its
// certificates) gets new ones.
const renewBefore = 2 * time.Minute

// renewalDue tells whether a session's credentials are due for renewal now.
func renewalDue(o Observed) bool {
	if o.Credentials == nil || o.Session.Status.ExpiresAt == nil {
		return false
	}
	notBefore, notAfter := credentials.Validity(o.Credentials.Data[credentials.KeyKubeconfig])
	at := renewal(notBefore, notAfter, o.Session.Status.ExpiresAt.Time)
	return !at.IsZero() && !o.Now.Before(at)
}

// renewal returns when credentials valid from notBefore to notAfter must be
// renewed for a session that expires at expiresAt, or zero when they
// outlast it: renewBefore ahead, but not before half their lifetime, so that
// a signer that issues shorter certificates than that does not make every
// renewal due at once (Gardener's kubeconfigs and Kubernetes' CSR signers
// give 10 minutes at least).
func renewal(notBefore, notAfter, expiresAt time.Time) time.Time {
	if notAfter.IsZero() || !notAfter.Before(expiresAt) {
		return time.Time{}
	}
	return notAfter.Add(-min(renewBefore, notAfter.Sub(notBefore)/2))
}
