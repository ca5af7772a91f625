// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
)

// TestCertificateRequestCarriesOwnerAndGroups: the target sees the owner
// as the user, the access level's group as the target binds it (Gardener's
// on a Shoot for admin and viewer) and the session's own group; a scoped
// session only its own group, which its RoleBindings bind.
func TestCertificateRequestCarriesOwnerAndGroups(t *testing.T) {
	key, err := credentials.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	level := func(name string) func(*v1alpha1.Session) {
		return func(s *v1alpha1.Session) { s.Spec.AccessLevel.Group = name }
	}
	for _, tt := range []struct {
		name    string
		session *v1alpha1.Session
		groups  []string
	}{
		{"cluster target", session(clusterTarget), []string{"viewer", "clustergate:session-name:sre/fix-etcd"}},
		{"cluster target, a level of --session-access-groups", session(clusterTarget, level("breakglass")),
			[]string{"breakglass", "clustergate:session-name:sre/fix-etcd"}},
		{"cluster target, a level whose group is not its name", session(clusterTarget, level("ops-lead")),
			[]string{"ops-leads", "clustergate:session-name:sre/fix-etcd"}},
		{"shoot viewer", session(), []string{"gardener.cloud:project:viewers", "clustergate:session-name:sre/fix-etcd"}},
		{"shoot admin", session(level(v1alpha1.AccessLevelAdmin)),
			[]string{"gardener.cloud:project:admins", "clustergate:session-name:sre/fix-etcd"}},
		{"shoot, another level: its group, which the Shoot's owner binds", session(level("ops-lead")),
			[]string{"ops-leads", "clustergate:session-name:sre/fix-etcd"}},
		{"cluster target, scoped: no level group", session(clusterTarget, level("ops-lead"), scoped("web")),
			[]string{"clustergate:session-name:sre/fix-etcd"}},
		{"shoot admin, scoped: no Gardener group", session(level(v1alpha1.AccessLevelAdmin), scoped("web", "db")),
			[]string{"clustergate:session-name:sre/fix-etcd"}},
		{"a level without a group, scoped", session(level("debugger"), scoped("web")),
			[]string{"clustergate:session-name:sre/fix-etcd"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			der, err := credentials.CertificateRequest(key, CommonName(tt.session), Groups(tt.session, *levelOf(tt.session)))
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(der)
			req, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if req.Subject.CommonName != "clustergate:session:alice" || !slices.Equal(req.Subject.Organization, tt.groups) {
				t.Errorf("subject = CN=%s O=%v, want CN=clustergate:session:alice O=%v", req.Subject.CommonName, req.Subject.Organization, tt.groups)
			}
		})
	}
}

func TestTargetClusterRefusesInsecureKubeconfigs(t *testing.T) {
	for name, cluster := range map[string]string{
		"skips TLS verification": `{server: "https://10.0.0.1", insecure-skip-tls-verify: true}`,
		"plain HTTP":             `{server: "http://10.0.0.1", certificate-authority-data: Zm9v}`,
		"no CA":                  `{server: "https://10.0.0.1"}`,
	} {
		t.Run(name, func(t *testing.T) {
			kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: ` + cluster + `}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
			if _, _, err := credentials.TargetCluster([]byte(kubeconfig)); err == nil {
				t.Error("accepted")
			}
		})
	}
	if server, ca, err := credentials.TargetCluster([]byte(shootKubeconfig)); err != nil || server != "https://127.0.0.1:6443" || string(ca) != "foo" {
		t.Errorf("TargetCluster = %q, %q, %v", server, ca, err)
	}
}
