// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package artifacts

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/clustergate/clustergate/test/utils/runbook"
)

// checkRestore: the runbook "Restore etcd from a snapshot" restores into
// what the StatefulSet's member 0 would use: a claim of its name, labels
// and size, the same data directory, cluster, token, image and security
// context, from a file a snapshot CronJob writes. make test-install runs
// the runbook; this says in the unit tests when the two drift.
func checkRestore(t *testing.T, r rendered, sts *appsv1.StatefulSet) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	const section = "### Restore etcd from a snapshot"
	manifest, err := runbook.Block(doc, section, "`etcd-restore.yaml`:")
	if err != nil {
		t.Fatal(err)
	}
	loop, err := runbook.Block(doc, section, "4. Restore the snapshot")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.ReplaceAll(manifest, "MEMBER", "0"), "\n---\n")
	if len(parts) != 2 {
		t.Fatalf("etcd-restore.yaml holds %d objects, want a claim and a pod", len(parts))
	}
	var claim corev1.PersistentVolumeClaim
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(parts[0]), &claim); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(parts[1]), &pod); err != nil {
		t.Fatal(err)
	}

	member := sts.Name + "-0"
	template := sts.Spec.VolumeClaimTemplates[0]
	if want := template.Name + "-" + member; claim.Name != want || claim.Namespace != sts.Namespace {
		t.Errorf("the restore's claim %s/%s, want %s/%s", claim.Namespace, claim.Name, sts.Namespace, want)
	}
	if !reflect.DeepEqual(claim.Labels, sts.Spec.Selector.MatchLabels) {
		t.Errorf("the restore's claim has labels %v, the StatefulSet's claims %v", claim.Labels, sts.Spec.Selector.MatchLabels)
	}
	if !reflect.DeepEqual(claim.Spec.AccessModes, template.Spec.AccessModes) || !claim.Spec.Resources.Requests.Storage().Equal(*template.Spec.Resources.Requests.Storage()) {
		t.Errorf("the restore's claim %v %v, the StatefulSet's %v %v", claim.Spec.AccessModes, claim.Spec.Resources.Requests,
			template.Spec.AccessModes, template.Spec.Resources.Requests)
	}

	etcd, restore := sts.Spec.Template.Spec.Containers[0], pod.Spec.Containers[0]
	if pod.Namespace != sts.Namespace || restore.Image != etcd.Image {
		t.Errorf("the restore pod %s runs %s, the members %s run %s", pod.Namespace, restore.Image, sts.Namespace, etcd.Image)
	}
	memberArgs := slices.Clone(etcd.Args)
	for i, a := range memberArgs {
		memberArgs[i] = strings.ReplaceAll(a, "$(POD_NAME)", member)
	}
	for _, f := range []string{"--name", "--data-dir", "--initial-cluster", "--initial-cluster-token", "--initial-advertise-peer-urls"} {
		if got, want := flagValue(restore.Command, f), flagValue(memberArgs, f); got != want || got == "" {
			t.Errorf("the restore's %s=%s, member 0's %s", f, got, want)
		}
	}
	if got, want := mountOf(restore, "data"), mountOf(etcd, template.Name); got != want || got == "" {
		t.Errorf("the restore writes the claim at %s, members read it at %s", got, want)
	}
	if !reflect.DeepEqual(pod.Spec.SecurityContext, sts.Spec.Template.Spec.SecurityContext) ||
		!reflect.DeepEqual(restore.SecurityContext, etcd.SecurityContext) {
		t.Errorf("the restore pod's security context %+v %+v, the members' %+v %+v", pod.Spec.SecurityContext, restore.SecurityContext,
			sts.Spec.Template.Spec.SecurityContext, etcd.SecurityContext)
	}

	// The example snapshot is a file a CronJob writes, on the claim the
	// restore mounts where the example says.
	snapshots := volumeAt(&pod.Spec, "/snapshots")
	written := false
	for name := range r["CronJob"] {
		var cj batchv1.CronJob
		r.decode(t, "CronJob", name, &cj)
		job := &cj.Spec.JobTemplate.Spec.Template.Spec
		file := job.Containers[0].Command[len(job.Containers[0].Command)-1]
		v := volumeAt(job, filepath.Dir(file))
		if strings.Contains(loop, `"s|SNAPSHOT|`+file+`|"`) && v.PersistentVolumeClaim != nil && snapshots.PersistentVolumeClaim != nil &&
			v.PersistentVolumeClaim.ClaimName == snapshots.PersistentVolumeClaim.ClaimName {
			written = true
		}
	}
	if !written {
		t.Errorf("the runbook restores a file no snapshot CronJob writes to the claim it mounts:\n%s", loop)
	}
}

// mountOf is where container c mounts the volume or claim template name.
func mountOf(c corev1.Container, name string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == name {
			return m.MountPath
		}
	}
	return ""
}
