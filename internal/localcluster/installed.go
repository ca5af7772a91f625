// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/clustergate/clustergate/internal/images"
	"github.com/clustergate/clustergate/internal/release"
)

// The installed way (Options.Installed): clustergate runs as the pods of
// the shipped Deployment and etcd StatefulSet on the process node, with
// certificates from cert-manager's own controllers, which run here as
// processes against the garden as a cluster's cert-manager would.

// StartCertManager applies cert-manager's CRDs (BinDir/cert-manager-crds,
// written by hack/tools/build.sh cert-manager) and starts its controller
// and CA injector against the garden; Stop stops them.
func (cp *ControlPlane) StartCertManager(ctx context.Context) error {
	crds := filepath.Join(cp.opts.BinDir, "cert-manager-crds")
	bin := filepath.Join(cp.opts.BinDir, "cert-manager")
	for _, p := range []string{crds, bin} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: run hack/tools/build.sh cert-manager", err)
		}
	}
	// _output/bin links to the current build; kubectl reads a linked
	// directory as a file.
	crds, err := filepath.EvalSymlinks(crds)
	if err != nil {
		return err
	}
	// Server-side: the CRDs' schemas are too large for the last-applied
	// annotation of a client-side apply.
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "apply", "--server-side", "-f", crds); err != nil {
		return err
	}
	if _, err := cp.Kubectl(ctx, cp.AdminKubeconfig, nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io", "crd/certificaterequests.cert-manager.io"); err != nil {
		return err
	}
	kc := "--kubeconfig=" + cp.AdminKubeconfig
	if err := cp.start("cert-manager-controller", "cert-manager", "controller", kc); err != nil {
		return err
	}
	if err := cp.start("cert-manager-cainjector", "cert-manager", "cainjector", kc); err != nil {
		return err
	}
	// Both fail fast on a bad configuration; give them a moment to do so.
	time.Sleep(time.Second)
	return cp.checkAlive()
}

// CheckAlive reports the first component that exited on its own.
func (cp *ControlPlane) CheckAlive() error { return cp.checkAlive() }

// InstallOptions name the images make images built, as pushed to the
// registry the process node pulls from (images.PushLayout), and what the
// docs tell users to set before applying.
type InstallOptions struct {
	// ServerRef is the server's repository:tag, ServerDigest its digest:
	// the overlay names it by digest, as the docs recommend.
	ServerRef, ServerDigest string
	// EtcdRef is etcd's repository:tag, EtcdDigest its digest.
	EtcdRef, EtcdDigest string
	// Gardener turns on GardenerClusterKubeconfigs of the local project,
	// as docs/operations.md ("Before applying") says: the server reaches
	// the garden's gardener-apiserver with its ServiceAccount's token,
	// which artifacts/gardener/role.yaml (applied by Start) lets read the
	// project's Shoots and request their kubeconfigs.
	Gardener bool
	// ExternalURL is the URL users reach the garden with: as
	// docs/operations.md ("Before applying") says, --external-url (with
	// the garden's CA, which every pod has with its ServiceAccount token,
	// as --external-ca-file) makes sessions/<name>/kubeconfig answer.
	ExternalURL string
	// ServerArgs are further server flags of docs/operations.md ("Flags")
	// that the overlay appends to the Deployment's arguments.
	ServerArgs []string
}

// gardenerSecret generates the Secret that gardenerPatch mounts.
const gardenerSecret = `secretGenerator:
- name: gardener-kubeconfig
  namespace: clustergate-system
  files: [kubeconfig=gardener.kubeconfig]
`

// gardenerPatch is a patches: entry that adds --gardener-kubeconfig (the
// Secret of gardenerSecret) and --gardener-project to the server.
const gardenerPatch = `- target: {kind: Deployment, name: clustergate}
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --gardener-kubeconfig=/etc/clustergate/gardener/kubeconfig
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --gardener-project=` + Project + `
    - op: add
      path: /spec/template/spec/containers/0/volumeMounts/-
      value: {name: gardener-kubeconfig, mountPath: /etc/clustergate/gardener, readOnly: true}
    - op: add
      path: /spec/template/spec/volumes/-
      value: {name: gardener-kubeconfig, secret: {secretName: gardener-kubeconfig}}
`

// serverArgsPatch is a patches: entry that appends args to the server's
// arguments.
func serverArgsPatch(args []string) string {
	var b strings.Builder
	b.WriteString("- target: {kind: Deployment, name: clustergate}\n  patch: |-\n")
	for _, a := range args {
		fmt.Fprintf(&b, "    - op: add\n      path: /spec/template/spec/containers/0/args/-\n      value: %q\n", a)
	}
	return b.String()
}

// gardenerKubeconfig reaches the garden, where gardener-apiserver is
// aggregated, with the pod's own ServiceAccount token and CA.
const gardenerKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: garden
  cluster:
    server: https://kubernetes.default.svc
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
users:
- name: clustergate
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
contexts:
- name: garden
  context: {cluster: garden, user: clustergate}
current-context: garden
`

// InstallHA applies the recommended layout as users of a release apply
// it: the release's manifest of the layout ha-cert-manager (overlays/ha
// with the cert-manager component, images pinned by digest) under an
// overlay in <RepoRoot>/_output/install/overlay with the settings of
// InstallOptions, with kubectl apply -k. It returns once the Certificates are Ready, etcd has
// three ready members, the Deployment is available and the APIService is
// Available, logging when each was reached. StartCertManager first.
func (cp *ControlPlane) InstallHA(ctx context.Context, o InstallOptions) error {
	overlay := filepath.Join(cp.opts.RepoRoot, "_output", "install", "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		return err
	}
	manifest, err := cp.releasedManifest(ctx, overlay, "ha-cert-manager", o)
	if err != nil {
		return err
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + manifest + "\n"
	var patches []string
	args := o.ServerArgs
	if o.ExternalURL != "" {
		args = append([]string{"--external-url=" + o.ExternalURL,
			"--external-ca-file=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}, args...)
	}
	if len(args) > 0 {
		patches = append(patches, serverArgsPatch(args))
	}
	if o.Gardener {
		kustomization += gardenerSecret
		patches = append(patches, gardenerPatch)
		if err := os.WriteFile(filepath.Join(overlay, "gardener.kubeconfig"), []byte(gardenerKubeconfig), 0o600); err != nil {
			return err
		}
	}
	if len(patches) > 0 {
		kustomization += "patches:\n" + strings.Join(patches, "")
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return err
	}
	applied := time.Now()
	kc := cp.AdminKubeconfig
	if _, err := cp.Kubectl(ctx, kc, nil, "apply", "-k", overlay); err != nil {
		return err
	}
	return cp.waitInstalled(ctx, applied, []installStep{
		{"certificates ready", kc, []string{"-n", ServerNamespace, "wait", "--for=condition=Ready", "certificate", "--all", "--timeout=120s"}},
		{"etcd 3/3 ready", kc, []string{"-n", ServerNamespace, "rollout", "status", "statefulset/clustergate-etcd", "--timeout=300s"}},
		{"deployment clustergate available", kc, []string{"-n", ServerNamespace, "rollout", "status", "deployment/clustergate", "--timeout=300s"}},
		{"APIService available", kc, []string{"wait", "--for=condition=Available", "apiservice/v1alpha1.clustergate.dev", "--timeout=120s"}},
	})
}

// installStep is a state of an install that kubectl waits for.
type installStep struct {
	// what the state is, for the log and errors.
	what string
	// kubeconfig is of the cluster kubectl asks.
	kubeconfig string
	// args make kubectl wait, such as wait --for or rollout status.
	args []string
}

// waitInstalled waits for each step in turn, logging when it was reached
// since applied.
func (cp *ControlPlane) waitInstalled(ctx context.Context, applied time.Time, steps []installStep) error {
	for _, step := range steps {
		if _, err := cp.Kubectl(ctx, step.kubeconfig, nil, step.args...); err != nil {
			return fmt.Errorf("waiting until %s: %w", step.what, err)
		}
		cp.opts.Logf("%s %s after apply", step.what, time.Since(applied).Round(100*time.Millisecond))
	}
	return nil
}

// PushedImages fills the image fields of InstallOptions from what
// images.PushLayout pushed of make images' layout: the server by its
// version tag (not latest), etcd by its tag, and both digests.
func PushedImages(pushed []images.Pushed) (InstallOptions, error) {
	var o InstallOptions
	for _, p := range pushed {
		ref := p.Reference.String()
		switch {
		case strings.Contains(ref, "/clustergate/clustergate-apiserver:") && !strings.HasSuffix(ref, ":latest"):
			o.ServerRef, o.ServerDigest = ref, p.Digest.String()
		case strings.Contains(ref, "/clustergate/etcd:"):
			o.EtcdRef, o.EtcdDigest = ref, p.Digest.String()
		}
	}
	if o.ServerRef == "" || o.EtcdRef == "" {
		return o, fmt.Errorf("the layout lacks the server or etcd image (%v): run make images", pushed)
	}
	return o, nil
}

// Pinned are the pushed images as a release pins them in place of the
// artifacts' references.
func (o InstallOptions) Pinned() []release.Image {
	repo := func(ref string) string {
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			return ref[:i]
		}
		return ref
	}
	return []release.Image{
		{Name: "ghcr.io/" + images.APIServerRepository, NewName: repo(o.ServerRef), Digest: o.ServerDigest},
		{Name: "ghcr.io/" + images.EtcdRepository, NewName: repo(o.EtcdRef), Digest: o.EtcdDigest},
	}
}

// releasedManifest renders the release's layout (internal/release, as make
// release does) into dir as clustergate-<layout>.yaml, with the images
// pushed by digest, and returns the file's name: what an overlay of a
// released manifest has as its resource.
func (cp *ControlPlane) releasedManifest(ctx context.Context, dir, layout string, o InstallOptions) (string, error) {
	i := slices.IndexFunc(release.Layouts, func(l release.Layout) bool { return l.Name == layout })
	if i < 0 {
		return "", fmt.Errorf("no released layout %s", layout)
	}
	rendered, err := release.RenderLayout(ctx, "kubectl", filepath.Join(cp.opts.RepoRoot, "artifacts"), filepath.Join(dir, "render"),
		release.Layouts[i], o.Pinned())
	if err != nil {
		return "", err
	}
	name := "clustergate-" + layout + ".yaml"
	return name, os.WriteFile(filepath.Join(dir, name), rendered, 0o644)
}
