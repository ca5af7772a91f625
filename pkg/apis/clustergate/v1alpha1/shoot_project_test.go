// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// TestFillShootProject: a Shoot named without a project is of the project
// whose namespace the object is in, else of the server's default; a named
// project stays, and a cluster target has none.
func TestFillShootProject(t *testing.T) {
	tests := []struct {
		name, namespace, serverDefault, project, want string
	}{
		{name: "outside a project namespace: the server's default", namespace: "sre", serverDefault: "local", want: "local"},
		{name: "in garden-<project>: that project", namespace: "garden-shop", serverDefault: "local", want: "shop"},
		{name: "in garden: Gardener's own project", namespace: "garden", serverDefault: "local", want: "garden"},
		{name: "a namespace that merely starts with garden", namespace: "gardening", serverDefault: "local", want: "local"},
		{name: "a named project stays", namespace: "garden-shop", serverDefault: "local", project: "pay", want: "pay"},
		{name: "no default, no project namespace", namespace: "sre", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := &clustergate.ShootReference{Name: "prod", Project: tt.project}
			FillShootProject(ref, tt.namespace, tt.serverDefault)
			if ref.Project != tt.want {
				t.Errorf("project = %q, want %q", ref.Project, tt.want)
			}
			if got := IsProjectNamespace(tt.namespace); got != (NamespaceProject(tt.namespace) != "") {
				t.Errorf("IsProjectNamespace(%q) = %v, but NamespaceProject says %q", tt.namespace, got, NamespaceProject(tt.namespace))
			}
		})
	}
	FillShootProject(nil, "garden-shop", "local") // a cluster target: nothing to fill
}

// TestLocksAndProjects: a lock on a Shoot of a project holds that project's
// Shoot only; a lock without a project holds the Shoot of that name in
// every project; sessions and kept kubeconfigs alike.
func TestLocksAndProjects(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lockOn := func(project string) *SessionLock {
		return &SessionLock{ObjectMeta: metav1.ObjectMeta{Name: "inc"}, Spec: SessionLockSpec{Reason: "INC-1",
			Target: &SessionLockTarget{Shoot: &ShootReference{Name: "prod", Project: project}}}}
	}
	tests := []struct {
		name, lockProject, project, shoot string
		want                              bool
	}{
		{name: "the same project's Shoot", lockProject: "shop", project: "shop", shoot: "prod", want: true},
		{name: "the same name in another project", lockProject: "shop", project: "pay", shoot: "prod"},
		{name: "a lock without a project: every project's", lockProject: "", project: "pay", shoot: "prod", want: true},
		{name: "another Shoot of the project", lockProject: "shop", project: "shop", shoot: "dev"},
		{name: "a session stored without a project: only project-less locks", lockProject: "shop", project: "", shoot: "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := lockOn(tt.lockProject)
			s := &Session{ObjectMeta: metav1.ObjectMeta{Namespace: "sre"}, Spec: SessionSpec{Owner: SessionOwner{Username: "alice"},
				Target: SessionTarget{Shoot: &ShootReference{Name: tt.shoot, Project: tt.project}}}}
			if got := LockMatches(l, LockSubjectOf(s), now); got != tt.want {
				t.Errorf("LockMatches = %v, want %v", got, tt.want)
			}
			if got := LockHoldsKubeconfig(l, "sre", ShootReference{Name: tt.shoot, Project: tt.project}, now); got != tt.want {
				t.Errorf("LockHoldsKubeconfig = %v, want %v", got, tt.want)
			}
		})
	}
}
