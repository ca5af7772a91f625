// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// UserKubeconfig writes a garden kubeconfig for user name in the given
// groups, with a client certificate from the local client CA, and returns
// its path.
func (cp *ControlPlane) UserKubeconfig(name string, groups ...string) (string, error) {
	return WriteUserKubeconfig(cp.opts.Dir, name, groups...)
}

// WriteUserKubeconfig writes a garden kubeconfig for user name into the
// control plane directory dir of a running control plane. Each user and set
// of groups has a file of its own, replaced whole, so that tests running
// side by side may ask for the same user in other groups, or again.
func WriteUserKubeconfig(dir, name string, groups ...string) (string, error) {
	userFiles.Lock()
	defer userFiles.Unlock()
	pki := filepath.Join(dir, "pki")
	ca, err := LoadCA(filepath.Join(pki, "garden-client-ca.crt"), filepath.Join(pki, "garden-client-ca.key"))
	if err != nil {
		return "", fmt.Errorf("no running local control plane in %s: %w", dir, err)
	}
	admin, err := clientcmd.LoadFromFile(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return "", err
	}
	cluster := admin.Clusters["garden"]
	users := filepath.Join(dir, "users")
	if err := os.MkdirAll(users, 0o700); err != nil {
		return "", err
	}
	file := strings.NewReplacer(":", "_", "/", "_").Replace(strings.Join(append([]string{name}, groups...), "+"))
	kp, err := ca.ClientCert(users, file, name, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(users, file+".kubeconfig")
	// Written beside and renamed: a kubectl reading the previous one never
	// sees half a file.
	if err := writeKubeconfig(path+".new", "garden", cluster.Server, cluster.CertificateAuthorityData, kp, name); err != nil {
		return "", err
	}
	return path, os.Rename(path+".new", path)
}

// userFiles serializes WriteUserKubeconfig, whose certificate and key files
// of one user and groups are written one after the other.
var userFiles sync.Mutex

// SessionKubeconfig fetches sessions/<name>/kubeconfig in namespace as the
// owner whose garden kubeconfig is ownerKubeconfig, completes its user with
// the owner's client certificate, as an exec plugin would, and writes it to
// path. A kubeconfig that comes with credentials of its own is refused.
func (cp *ControlPlane) SessionKubeconfig(ctx context.Context, ownerKubeconfig, namespace, name, path string) error {
	raw, err := cp.sessionKubeconfig(ctx, ownerKubeconfig, namespace, name)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return err
	}
	for _, u := range cfg.AuthInfos {
		if u.Token != "" || u.TokenFile != "" || len(u.ClientKeyData) > 0 || u.ClientKey != "" || u.Password != "" {
			return errors.New("sessions/kubeconfig handed out credentials")
		}
	}
	owner, err := clientcmd.LoadFromFile(ownerKubeconfig)
	if err != nil {
		return err
	}
	ownerUser := owner.AuthInfos[owner.Contexts[owner.CurrentContext].AuthInfo]
	cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo] = &clientcmdapi.AuthInfo{
		ClientCertificateData: ownerUser.ClientCertificateData, ClientKeyData: ownerUser.ClientKeyData,
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// sessionKubeconfig is sessions/<name>/kubeconfig in namespace, as the
// user of kubeconfig gets it.
func (cp *ControlPlane) sessionKubeconfig(ctx context.Context, kubeconfig, namespace, name string) ([]byte, error) {
	raw, err := cp.Kubectl(ctx, kubeconfig, nil, "get", "--raw",
		fmt.Sprintf("/apis/clustergate.dev/v1alpha1/namespaces/%s/sessions/%s/kubeconfig", namespace, name))
	if err != nil {
		return nil, err
	}
	var answer struct{ Kubeconfig []byte }
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, err
	}
	return answer.Kubeconfig, nil
}

// writeKubeconfig writes a kubeconfig for server with the client certificate
// user, embedded, as userName.
func writeKubeconfig(path, cluster, server string, caPEM []byte, user KeyPair, userName string) error {
	cert, err := os.ReadFile(user.CertFile)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(user.KeyFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: userName}
	cfg.CurrentContext = cluster
	return clientcmd.WriteToFile(*cfg, path)
}
