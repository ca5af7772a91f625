// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package artifacts renders every supported layout of artifacts/ with
// kustomize, as `kubectl apply -k` does, and checks what each promises:
// the base keeps one replica on the embedded etcd and a volume, only the
// highly available layout has replicas, and those share a 3-member etcd
// with TLS, probes, a quota, compaction and snapshots; every image is pinned
// and every container runs as non-root. The layouts are described in
// docs/operations.md, "Installing".
package artifacts

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// repo is the repository's root, from this package's directory.
const repo = "../.."

func TestLayouts(t *testing.T) {
	base := render(t, layouts[0])
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			r := render(t, l)
			var server appsv1.Deployment
			if !r.decode(t, "Deployment", "clustergate", &server) {
				t.Fatal("no Deployment clustergate")
			}
			if l.ha {
				checkHA(t, r, &server)
				checkEtcd(t, r, &server)
				var sts appsv1.StatefulSet
				r.decode(t, "StatefulSet", "clustergate-etcd", &sts)
				checkRestore(t, r, &sts)
				// The HA layout names the base's parts one by one
				// (overlays/ha): it must hold all of them.
				for kind, names := range base {
					for name := range names {
						embeddedStore := kind == "PersistentVolumeClaim" && name == "clustergate-data"
						if _, ok := r[kind][name]; !ok && !embeddedStore {
							t.Errorf("%s %s of the base is missing", kind, name)
						}
					}
				}
			} else {
				checkSingle(t, r, &server)
			}
			if l.certManager {
				checkCertificates(t, r)
			}
			checkPods(t, r)
		})
	}
}

// checkSingle: the base runs one replica on the embedded etcd, with its
// data on a volume that survives the pod, replaced by Recreate.
func checkSingle(t *testing.T, r rendered, server *appsv1.Deployment) {
	t.Helper()
	if server.Spec.Replicas == nil || *server.Spec.Replicas != 1 {
		t.Errorf("replicas %d, want 1 on the embedded etcd", replicas(server.Spec.Replicas))
	}
	if server.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q, want Recreate (a ReadWriteOnce volume)", server.Spec.Strategy.Type)
	}
	args := server.Spec.Template.Spec.Containers[0].Args
	if flagValue(args, "--etcd-servers") != "" {
		t.Errorf("the base names etcd servers: %v", args)
	}
	dataDir := flagValue(args, "--data-dir")
	claim := volumeAt(&server.Spec.Template.Spec, dataDir).PersistentVolumeClaim
	if claim == nil {
		t.Fatalf("--data-dir=%s is not on a PersistentVolumeClaim", dataDir)
	}
	var pvc corev1.PersistentVolumeClaim
	if !r.decode(t, "PersistentVolumeClaim", claim.ClaimName, &pvc) {
		t.Errorf("no PersistentVolumeClaim %s", claim.ClaimName)
	}
	for _, kind := range []string{"StatefulSet", "CronJob", "PodDisruptionBudget"} {
		if len(r[kind]) != 0 {
			t.Errorf("the base has a %s", kind)
		}
	}
}

// checkHA: replicas on a shared etcd, a rolling update that keeps them
// serving, a PodDisruptionBudget, and spread over nodes.
func checkHA(t *testing.T, r rendered, server *appsv1.Deployment) {
	t.Helper()
	if server.Spec.Replicas == nil || *server.Spec.Replicas < 2 {
		t.Errorf("replicas %d, want at least 2", replicas(server.Spec.Replicas))
	}
	s := server.Spec.Strategy
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
		s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v, want a rolling update with maxUnavailable 0", s)
	}
	var pdb policyv1.PodDisruptionBudget
	if !r.decode(t, "PodDisruptionBudget", "clustergate", &pdb) {
		t.Error("no PodDisruptionBudget clustergate")
	} else if !selects(pdb.Spec.Selector.MatchLabels, server.Spec.Template.Labels) {
		t.Errorf("PodDisruptionBudget selects %v, not the server's pods", pdb.Spec.Selector.MatchLabels)
	}
	if a := server.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil ||
		len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)+len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Error("no pod anti-affinity")
	}
	if _, ok := r["PersistentVolumeClaim"]["clustergate-data"]; ok {
		t.Error("the embedded etcd's claim is still there")
	}
	args := server.Spec.Template.Spec.Containers[0].Args
	if v := volumeAt(&server.Spec.Template.Spec, flagValue(args, "--data-dir")); v.PersistentVolumeClaim != nil {
		t.Errorf("--data-dir is on the claim %s, which replicas cannot share", v.PersistentVolumeClaim.ClaimName)
	}
	for _, f := range []string{"--etcd-cafile", "--etcd-certfile", "--etcd-keyfile"} {
		if flagValue(args, f) == "" {
			t.Errorf("no %s", f)
		}
	}
}

// checkEtcd: the StatefulSet forms a 3-member cluster over TLS the server
// reaches, with probes, a quota, compaction and snapshots.
func checkEtcd(t *testing.T, r rendered, server *appsv1.Deployment) {
	t.Helper()
	var sts appsv1.StatefulSet
	if !r.decode(t, "StatefulSet", "clustergate-etcd", &sts) {
		t.Fatal("no StatefulSet clustergate-etcd")
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Fatalf("etcd replicas %d, want 3", replicas(sts.Spec.Replicas))
	}
	c := sts.Spec.Template.Spec.Containers[0]
	args := append(slices.Clone(c.Command), c.Args...)
	for _, f := range []string{"--client-cert-auth", "--peer-client-cert-auth"} {
		if !slices.Contains(args, f) {
			t.Errorf("etcd without %s", f)
		}
	}
	for _, f := range []string{"--trusted-ca-file", "--cert-file", "--key-file", "--peer-trusted-ca-file",
		"--peer-cert-file", "--peer-key-file", "--quota-backend-bytes", "--auto-compaction-mode", "--auto-compaction-retention"} {
		if flagValue(args, f) == "" {
			t.Errorf("etcd without %s", f)
		}
	}
	for _, f := range []string{"--listen-client-urls", "--listen-peer-urls", "--advertise-client-urls", "--initial-advertise-peer-urls"} {
		if !strings.HasPrefix(flagValue(args, f), "https://") {
			t.Errorf("etcd %s=%s, want https", f, flagValue(args, f))
		}
	}
	if c.StartupProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe == nil {
		t.Error("etcd lacks a startup, readiness or liveness probe")
	}
	// Members and the server's --etcd-servers name the same pods.
	ns := sts.Namespace
	var members, servers []string
	for i := range int(*sts.Spec.Replicas) {
		pod := sts.Name + "-" + string(rune('0'+i))
		host := pod + "." + sts.Spec.ServiceName + "." + ns + ".svc"
		members = append(members, pod+"=https://"+host+":2380")
		servers = append(servers, "https://"+host+":2379")
	}
	if got := flagValue(args, "--initial-cluster"); got != strings.Join(members, ",") {
		t.Errorf("--initial-cluster=%s, want %s", got, strings.Join(members, ","))
	}
	if got := flagValue(server.Spec.Template.Spec.Containers[0].Args, "--etcd-servers"); got != strings.Join(servers, ",") {
		t.Errorf("--etcd-servers=%s, want %s", got, strings.Join(servers, ","))
	}
	if _, ok := r["Service"][sts.Spec.ServiceName]; !ok {
		t.Errorf("no Service %s", sts.Spec.ServiceName)
	}
	var pdb policyv1.PodDisruptionBudget
	if !r.decode(t, "PodDisruptionBudget", "clustergate-etcd", &pdb) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Error("no PodDisruptionBudget clustergate-etcd with maxUnavailable 1")
	}
	// The etcd image is the version the tests run (hack/tools/etcd/go.mod).
	gomod, err := os.ReadFile(filepath.Join(repo, "hack", "tools", "etcd", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := regexp.MustCompile(`go\.etcd\.io/etcd/server/v3 (v\S+)`).FindSubmatch(gomod)
	if pinned == nil || !strings.HasSuffix(c.Image, ":"+string(pinned[1])) {
		t.Errorf("etcd image %s, want the pinned version %s", c.Image, pinned)
	}
	// Snapshots: etcdctl snapshot save with a client certificate onto a claim.
	if len(r["CronJob"]) == 0 {
		t.Fatal("no snapshot CronJob")
	}
	for name := range r["CronJob"] {
		var cj batchv1.CronJob
		r.decode(t, "CronJob", name, &cj)
		pod := &cj.Spec.JobTemplate.Spec.Template.Spec
		cmd := strings.Join(append(slices.Clone(pod.Containers[0].Command), pod.Containers[0].Args...), " ")
		if !strings.Contains(cmd, "etcdctl") || !strings.Contains(cmd, "snapshot save") || !strings.Contains(cmd, "--cert=") {
			t.Errorf("CronJob %s runs %q, want etcdctl snapshot save with a client certificate", name, cmd)
		}
		if c := pod.Containers[0]; c.Image != sts.Spec.Template.Spec.Containers[0].Image {
			t.Errorf("CronJob %s runs %s, not the etcd image", name, c.Image)
		}
		file := cmd[strings.LastIndex(cmd, " ")+1:]
		if v := volumeAt(pod, filepath.Dir(file)); v.PersistentVolumeClaim == nil {
			t.Errorf("CronJob %s writes %s, not onto a PersistentVolumeClaim", name, file)
		} else if _, ok := r["PersistentVolumeClaim"][v.PersistentVolumeClaim.ClaimName]; !ok {
			t.Errorf("no PersistentVolumeClaim %s", v.PersistentVolumeClaim.ClaimName)
		}
	}
}

// certificate is the part of a cert-manager Certificate checked here.
type certificate struct {
	Spec struct {
		SecretName string   `json:"secretName"`
		DNSNames   []string `json:"dnsNames"`
		IsCA       bool     `json:"isCA"`
		Usages     []string `json:"usages"`
		IssuerRef  struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// checkCertificates: cert-manager issues every Secret a pod mounts, with the
// names clients check, and injects the CA into the APIService.
func checkCertificates(t *testing.T, r rendered) {
	t.Helper()
	issued := map[string]certificate{}
	for name := range r["Certificate"] {
		var c certificate
		r.decode(t, "Certificate", name, &c)
		if _, ok := r["Issuer"][c.Spec.IssuerRef.Name]; !ok || c.Spec.IssuerRef.Kind != "Issuer" {
			t.Errorf("Certificate %s: issuer %s %s is not shipped", name, c.Spec.IssuerRef.Kind, c.Spec.IssuerRef.Name)
		}
		issued[c.Spec.SecretName] = c
	}
	for _, s := range mountedSecrets(t, r) {
		if _, ok := issued[s]; !ok {
			t.Errorf("Secret %s is mounted but not issued", s)
		}
	}
	if c := issued["clustergate-serving-cert"]; !slices.Contains(c.Spec.DNSNames, "clustergate.clustergate-system.svc") {
		t.Errorf("serving certificate names %v, not the Service clustergate.clustergate-system.svc", c.Spec.DNSNames)
	}
	if _, ha := r["StatefulSet"]["clustergate-etcd"]; ha {
		peer := issued["clustergate-etcd-peer-tls"]
		if !slices.Contains(peer.Spec.DNSNames, "*.clustergate-etcd.clustergate-system.svc") ||
			!slices.Contains(peer.Spec.Usages, "server auth") || !slices.Contains(peer.Spec.Usages, "client auth") {
			t.Errorf("etcd peer certificate %+v: want *.clustergate-etcd.clustergate-system.svc, server and client auth", peer.Spec)
		}
	}
	var apiservice struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	r.decode(t, "APIService", "v1alpha1.clustergate.dev", &apiservice)
	if got := apiservice.Metadata.Annotations["cert-manager.io/inject-ca-from"]; got != "clustergate-system/clustergate-serving-cert" {
		t.Errorf("APIService's inject-ca-from %q", got)
	}
}

// checkPods: every pod template of the layout runs pinned images as
// non-root on a read-only root file system, without privilege escalation.
func checkPods(t *testing.T, r rendered) {
	t.Helper()
	for name, pod := range podSpecs(t, r) {
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			where := name + " container " + c.Name
			// "auto" is Istio's gateway injection, which sets the image.
			if c.Image != "auto" && (strings.HasSuffix(c.Image, ":latest") || !regexp.MustCompile(`:[\w.-]+$|@sha256:`).MatchString(c.Image)) {
				t.Errorf("%s: image %q is not pinned", where, c.Image)
			}
			nonRoot := pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot
			var user *int64
			if pod.SecurityContext != nil {
				user = pod.SecurityContext.RunAsUser
			}
			if s := c.SecurityContext; s != nil {
				if s.RunAsNonRoot != nil {
					nonRoot = *s.RunAsNonRoot
				}
				if s.RunAsUser != nil {
					user = s.RunAsUser
				}
			}
			if !nonRoot || (user != nil && *user == 0) {
				t.Errorf("%s may run as root", where)
			}
			s := c.SecurityContext
			if s == nil || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation {
				t.Errorf("%s: want no privilege escalation", where)
			}
			// Istio's injection template sets the gateway's root file
			// system itself.
			if c.Image != "auto" && (s == nil || s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem) {
				t.Errorf("%s: want a read-only root file system", where)
			}
		}
	}
}
