// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"crypto/x509"
	"net"
)

// certificates are every CA and certificate of a local control plane,
// issued afresh into its pki directory at each start. Their file names are
// part of the directory's contract: WriteUserKubeconfig reads the garden
// client CA back from it.
type certificates struct {
	// gardenCA serves the garden kube-apiserver; clientCA signs the client
	// certificates of garden users (the admin, clustergate's identity, the
	// users of WriteUserKubeconfig).
	gardenCA, clientCA                          *CA
	gardenServing, gardenAdmin, clustergateUser KeyPair
	// frontProxyCA signs the certificate with which the garden's aggregator
	// forwards requests to aggregated servers, as user X-Remote-User.
	frontProxyCA     *CA
	frontProxyClient KeyPair
	// serviceAccount signs and verifies service account tokens of both
	// kube-apiservers.
	serviceAccount *CA
	// shootCA serves the shoot kube-apiserver; shootClientCA signs its
	// clients: the admin, Gardener's admin and viewer kubeconfigs, and the
	// CSRs the shoot's kube-controller-manager signs for sessions.
	shootCA, shootClientCA                  *CA
	shootServing, shootAdmin, kubeletClient KeyPair
	// nodeCA serves the stand-in node, which the shoot kube-apiserver
	// verifies.
	nodeCA      *CA
	nodeServing KeyPair
	// aggregatedCA serves the aggregated servers: gardener-apiserver and
	// every clustergate replica.
	aggregatedCA                        *CA
	gardenerServing, clustergateServing KeyPair
}

// issueCertificates creates every CA and certificate in dir. The shoot
// kube-apiserver's serving certificate also names shootIPs: the addresses
// other than 127.0.0.1 it is reached at.
func issueCertificates(dir string, shootIPs ...net.IP) (*certificates, error) {
	var err error
	// Each helper does nothing once a step has failed, so that the list
	// below reads as what is issued, and the first error is returned.
	newCA := func(name string, rsaKey bool) *CA {
		if err != nil {
			return nil
		}
		var ca *CA
		ca, err = NewCA(dir, name, rsaKey)
		return ca
	}
	serving := func(ca *CA, name string, dnsNames ...string) KeyPair {
		if err != nil {
			return KeyPair{}
		}
		var kp KeyPair
		kp, err = ca.ServingCert(dir, name, dnsNames...)
		return kp
	}
	client := func(ca *CA, name, user string, groups ...string) KeyPair {
		if err != nil {
			return KeyPair{}
		}
		var kp KeyPair
		kp, err = ca.ClientCert(dir, name, user, groups...)
		return kp
	}
	inCluster := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"}

	var c certificates
	c.gardenCA = newCA("garden-ca", false)
	c.gardenServing = serving(c.gardenCA, "garden-apiserver", inCluster...)
	c.clientCA = newCA("garden-client-ca", false)
	c.gardenAdmin = client(c.clientCA, "garden-admin", "admin", "system:masters")
	c.clustergateUser = client(c.clientCA, "clustergate-client", ClustergateServiceAccount,
		"system:serviceaccounts", "system:serviceaccounts:clustergate-system")
	c.frontProxyCA = newCA("front-proxy-ca", false)
	c.frontProxyClient = client(c.frontProxyCA, "front-proxy-client", "front-proxy-client")
	c.serviceAccount = newCA("service-account", false)

	c.shootCA = newCA("shoot-ca", false)
	if err == nil {
		c.shootServing, err = c.shootCA.Issue(dir, "shoot-apiserver", "shoot-apiserver", nil, append([]string{"localhost"}, inCluster...),
			append([]net.IP{net.IPv4(127, 0, 0, 1)}, shootIPs...), x509.ExtKeyUsageServerAuth)
	}
	// Gardener signs admin and viewer certificates with the shoot's client
	// CA, and needs its key as RSA in PKCS#1.
	c.shootClientCA = newCA("shoot-client-ca", true)
	c.shootAdmin = client(c.shootClientCA, "shoot-admin", "admin", "system:masters")
	c.kubeletClient = client(c.shootClientCA, "shoot-apiserver-kubelet-client", "kube-apiserver-kubelet-client")
	c.nodeCA = newCA("node-ca", false)
	c.nodeServing = serving(c.nodeCA, "node")

	c.aggregatedCA = newCA(aggregatedCAName, false)
	c.gardenerServing = serving(c.aggregatedCA, "gardener-apiserver", "gardener-apiserver.kube-system.svc")
	c.clustergateServing = serving(c.aggregatedCA, "clustergate", "clustergate.clustergate-system.svc")
	if err != nil {
		return nil, err
	}
	return &c, nil
}
