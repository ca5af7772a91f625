// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// This file is the rule of which Gardener project a Shoot target is of: the
// session and kubeconfig registries fill it in at create with it, the
// TargetAccess admission plugin decides where grants for it count, and
// SessionLocks and SessionApprovalPolicies match on it.

// GardenNamespace is Gardener's own namespace in the garden, that of its
// project "garden". Every other project's namespace starts with
// ProjectNamespacePrefix: Gardener refuses a Project whose spec.namespace
// is neither.
const (
	GardenNamespace        = "garden"
	ProjectNamespacePrefix = "garden-"
)

// IsProjectNamespace says whether ns may be a Gardener project's namespace
// in the garden: "garden" or "garden-<anything>". Grants there are the
// project's (Gardener binds its members' roles there), so they never count
// for the Shoots of another project.
func IsProjectNamespace(ns string) bool {
	return ns == GardenNamespace || strings.HasPrefix(ns, ProjectNamespacePrefix)
}

// NamespaceProject is the project whose namespace ns is by Gardener's
// naming, "garden-<project>" (and "garden" for the project garden), or ""
// for a namespace that is no project's. A Project whose spec.namespace is
// not garden-<its name> is not found this way: objects in its namespace
// name it.
func NamespaceProject(ns string) string {
	if ns == GardenNamespace {
		return GardenNamespace
	}
	if project, ok := strings.CutPrefix(ns, ProjectNamespacePrefix); ok {
		return project
	}
	return ""
}

// DefaultShootProject is the project of a Shoot that a Session or a
// GardenerClusterKubeconfig in namespace names without one: the
// namespace's project, so that objects in garden-<project> are about that
// project's Shoots, as Gardener's project members expect; else the
// server's --gardener-project (serverDefault), which may be "".
func DefaultShootProject(namespace, serverDefault string) string {
	if project := NamespaceProject(namespace); project != "" {
		return project
	}
	return serverDefault
}

// FillShootProject gives ref, when it names no project, the default
// project of an object in namespace (DefaultShootProject): the session and
// kubeconfig registries do at create, so that the stored object says which
// project's Shoot it is, whatever the server's flags later say. A nil ref
// (a cluster target) is left alone.
func FillShootProject(ref *clustergate.ShootReference, namespace, serverDefault string) {
	if ref != nil && ref.Project == "" {
		ref.Project = DefaultShootProject(namespace, serverDefault)
	}
}

// ShootMatches says whether a Shoot named in a SessionLock or a
// SessionApprovalPolicy (selector) is the Shoot of a session or a kept
// kubeconfig (target): the names are equal and the selector names no
// project or the same one. (The internal ShootReference converts to this
// one as is.) A selector without a project holds the
// Shoot of that name in every project: locks and policies only restrict,
// so the wider match is the safe reading of those written before projects.
func ShootMatches(selector, target ShootReference) bool {
	return selector.Name == target.Name && (selector.Project == "" || selector.Project == target.Project)
}

// ShootTargetName prints a Shoot as tables and messages show it:
// "<project>/<name>", or the name alone when no project is known.
func ShootTargetName(project, shoot string) string {
	if project == "" {
		return shoot
	}
	return project + "/" + shoot
}
