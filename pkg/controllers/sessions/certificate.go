// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// CommonName is the CN of a session's client certificate: its user on the
// target.
func CommonName(s *v1alpha1.Session) string {
	return v1alpha1.SessionUserPrefix + s.Spec.Owner.Username
}

// Groups are the organizations of a session's client certificate of the
// given level: its groups on the target. An unscoped session's first grants
// the access level on the whole target: on a cluster target the level's
// group, which the target's admins bind; on a Shoot, for the levels admin
// and viewer, the group Gardener puts its own kubeconfigs of the level in,
// which Gardener binds on every Shoot, so a session has the very rights of
// the level's Gardener kubeconfig, and for other levels their group, which
// the Shoot's owner binds. The last, the only one of a scoped session,
// names the session: for the audit log, and as the subject of a scoped
// session's RoleBindings.
func Groups(s *v1alpha1.Session, level sessionaccess.Level) []string {
	own := SessionGroup(s)
	if Scoped(s) {
		return []string{own}
	}
	group := level.Group
	if s.Spec.Target.Shoot != nil && (level.Name == sessionaccess.LevelAdmin || level.Name == sessionaccess.LevelViewer) {
		group = gardener.ShootGroup(shootLevel(s))
	}
	return []string{group, own}
}

// SessionGroup is the group that names a session on its target.
func SessionGroup(s *v1alpha1.Session) string {
	return v1alpha1.SessionGroupPrefix + s.Namespace + "/" + s.Name
}

// Scoped tells whether a session is scoped to namespaces of its target.
func Scoped(s *v1alpha1.Session) bool {
	return s.Spec.Scope != nil && len(s.Spec.Scope.Namespaces) > 0
}

// levelProblem says why no certificate can be minted for the session's
// access level, or "": the server's configuration no longer has the level,
// or no group for a session that needs one. The API refuses both when the
// session is created; a configuration changed since can bring them back.
func levelProblem(o Observed) string {
	name := o.Session.Spec.AccessLevel.Group
	switch {
	case o.Level == nil:
		return fmt.Sprintf("the server has no access level %q (--session-access-config)", name)
	case !Scoped(o.Session) && !o.Level.WholeTarget():
		return fmt.Sprintf("access level %q has no group for a whole target: a session of it must be scoped to namespaces", name)
	}
	return ""
}

// CheckCertificate verifies an issued certificate before use: it belongs to
// the private key, carries the session's CN and its groups of the level,
// and is valid now.
func CheckCertificate(certPEM, keyPEM []byte, s *v1alpha1.Session, level sessionaccess.Level, now time.Time) error {
	cert, err := credentials.ParseCertificate(certPEM)
	if err != nil {
		return err
	}
	key, err := credentials.ParsePrivateKey(keyPEM)
	if err != nil {
		return err
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return fmt.Errorf("the issued certificate does not belong to the session's key")
	}
	if groups := Groups(s, level); cert.Subject.CommonName != CommonName(s) || !slices.Equal(cert.Subject.Organization, groups) {
		return fmt.Errorf("the issued certificate is for CN=%s O=%v, not CN=%s O=%v",
			cert.Subject.CommonName, cert.Subject.Organization, CommonName(s), groups)
	}
	if now.Before(cert.NotBefore) || !now.Before(cert.NotAfter) {
		return fmt.Errorf("the issued certificate is valid from %s to %s, not now", cert.NotBefore, cert.NotAfter)
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return fmt.Errorf("the issued certificate is not for client authentication")
	}
	return nil
}
