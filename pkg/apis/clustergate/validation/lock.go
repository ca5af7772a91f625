// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// MaxLockUsers bounds spec.users: the names of one person, a garden name
// and one in each data-plane identity space.
const MaxLockUsers = 16

// ValidateSessionLock validates a SessionLock, new or updated: it names at
// least one of user, users, group, target and namespace, at most one
// target, and a reason.
func ValidateSessionLock(l *clustergate.SessionLock) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&l.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateSessionLockSpec(&l.Spec, field.NewPath("spec"))...)
}

// ValidateSessionLockUpdate validates an update of a SessionLock: its
// metadata as any object's, its spec as a new one's (a lock may be changed,
// such as its expiry moved).
func ValidateSessionLockUpdate(newLock, oldLock *clustergate.SessionLock) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newLock.ObjectMeta, &oldLock.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateSessionLockSpec(&newLock.Spec, field.NewPath("spec"))...)
}

func validateSessionLockSpec(spec *clustergate.SessionLockSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.User == "" && len(spec.Users) == 0 && spec.Group == "" && spec.Target == nil && spec.Namespace == "" {
		allErrs = append(allErrs, field.Required(specPath, "at least one of user, users, group, target and namespace, which must all match"))
	}
	usersPath := specPath.Child("users")
	if len(spec.Users) > MaxLockUsers {
		allErrs = append(allErrs, field.TooMany(usersPath, len(spec.Users), MaxLockUsers))
	}
	seen := map[string]bool{}
	for i, name := range spec.Users {
		switch {
		case name == "":
			allErrs = append(allErrs, field.Required(usersPath.Index(i), "a user name; an empty one would match no one"))
		case seen[name]:
			allErrs = append(allErrs, field.Duplicate(usersPath.Index(i), name))
		}
		seen[name] = true
	}
	if t := spec.Target; t != nil {
		allErrs = append(allErrs, validateLockTarget(t, specPath.Child("target"))...)
	}
	if spec.Namespace != "" {
		allErrs = append(allErrs, validateDNSLabel(spec.Namespace, specPath.Child("namespace"))...)
	}
	reasonPath := specPath.Child("reason")
	if spec.Reason == "" {
		allErrs = append(allErrs, field.Required(reasonPath, "a lock needs a reason, such as the incident it is for"))
	}
	allErrs = append(allErrs, validateReason(spec.Reason, reasonPath)...)
	return allErrs
}

// validateLockTarget checks a target named as sessions name it: exactly one
// of shoot and cluster, by a valid name.
func validateLockTarget(t *clustergate.SessionLockTarget, targetPath *field.Path) field.ErrorList {
	switch {
	case t.Shoot == nil && t.Cluster == nil:
		return field.ErrorList{field.Required(targetPath, "exactly one of shoot or cluster is required")}
	case t.Shoot != nil && t.Cluster != nil:
		return field.ErrorList{field.Forbidden(targetPath.Child("cluster"), "may not be set together with shoot")}
	case t.Shoot != nil:
		return validateShootReference(t.Shoot, targetPath.Child("shoot"))
	}
	return validateDNSLabel(t.Cluster.Name, targetPath.Child("cluster", "name"))
}
