// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// Bounds of a SessionApprovalPolicy.
const (
	// MaxPolicyApprovers bounds spec.approvers.count: more would be a
	// committee, not an approval.
	MaxPolicyApprovers = 10
	// MaxPolicyListLength bounds every list of a policy.
	MaxPolicyListLength = 64
)

// ValidateSessionApprovalPolicy validates a new SessionApprovalPolicy.
func ValidateSessionApprovalPolicy(p *clustergate.SessionApprovalPolicy) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateApprovalPolicySpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidateSessionApprovalPolicyUpdate validates an update: its metadata as
// any object's, its spec as a new one's. Sessions keep what the policy said
// when they were created, so a change reaches only new sessions.
func ValidateSessionApprovalPolicyUpdate(newP, oldP *clustergate.SessionApprovalPolicy) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateApprovalPolicySpec(&newP.Spec, field.NewPath("spec"))...)
}

func validateApprovalPolicySpec(spec *clustergate.SessionApprovalPolicySpec, specPath *field.Path) field.ErrorList {
	sel, selPath := &spec.Sessions, specPath.Child("sessions")
	allErrs := validateNames(sel.Namespaces, selPath.Child("namespaces"), validateDNSLabel)
	allErrs = append(allErrs, validateNames(sel.AccessLevels, selPath.Child("accessLevels"), nil)...)
	targetsPath := selPath.Child("targets")
	if n := len(sel.Targets); n > MaxPolicyListLength {
		allErrs = append(allErrs, field.TooMany(targetsPath, n, MaxPolicyListLength))
	}
	for i := range sel.Targets {
		allErrs = append(allErrs, validateLockTarget(&sel.Targets[i], targetsPath.Index(i))...)
	}
	if sel.TargetLabels != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel.TargetLabels,
			metav1validation.LabelSelectorValidationOptions{}, selPath.Child("targetLabels"))...)
	}

	if a := spec.Approvers; a != nil {
		approversPath := specPath.Child("approvers")
		if !spec.ApprovalRequired {
			allErrs = append(allErrs, field.Forbidden(approversPath, "only with approvalRequired: true"))
		}
		if a.Count < 1 || a.Count > MaxPolicyApprovers {
			allErrs = append(allErrs, field.Invalid(approversPath.Child("count"), a.Count, fmt.Sprintf("must be between 1 and %d", MaxPolicyApprovers)))
		}
		allErrs = append(allErrs, validateNames(a.Users, approversPath.Child("users"), nil)...)
		allErrs = append(allErrs, validateNames(a.Groups, approversPath.Child("groups"), nil)...)
		allErrs = append(allErrs, validateNames(a.ExcludeOwnerGroups, approversPath.Child("excludeOwnerGroups"), nil)...)
		if named := len(a.Users) + len(a.Groups); len(a.Groups) == 0 && named > 0 && int(a.Count) > named {
			allErrs = append(allErrs, field.Invalid(approversPath.Child("count"), a.Count,
				fmt.Sprintf("needs more approvers than the %d users named, so no session could ever be approved", named)))
		}
	}
	if a := spec.AutoApprove; a != nil {
		autoPath := specPath.Child("autoApprove")
		if !spec.ApprovalRequired {
			allErrs = append(allErrs, field.Forbidden(autoPath, "only with approvalRequired: true: without it nothing waits to be approved"))
		}
		if len(a.Groups) == 0 {
			allErrs = append(allErrs, field.Required(autoPath.Child("groups"), "the owner's groups whose sessions are approved without a human"))
		}
		allErrs = append(allErrs, validateNames(a.Groups, autoPath.Child("groups"), nil)...)
		if a.MaxTTL.Duration <= 0 {
			allErrs = append(allErrs, field.Invalid(autoPath.Child("maxTTL"), a.MaxTTL.Duration.String(), "must be positive, for example 1h"))
		}
	}
	if t := spec.MaxTTL; t != nil && t.Duration <= 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("maxTTL"), t.Duration.String(), "must be positive, for example 4h"))
	}
	return allErrs
}

// validateNames checks a list of names: at most MaxPolicyListLength, none
// empty or twice, each valid by check when given.
func validateNames(names []string, fldPath *field.Path, check func(string, *field.Path) field.ErrorList) field.ErrorList {
	var allErrs field.ErrorList
	if n := len(names); n > MaxPolicyListLength {
		allErrs = append(allErrs, field.TooMany(fldPath, n, MaxPolicyListLength))
	}
	seen := sets.New[string]()
	for i, name := range names {
		switch {
		case name == "":
			allErrs = append(allErrs, field.Required(fldPath.Index(i), "a name; an empty one matches nothing"))
		case seen.Has(name):
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), name))
		case check != nil:
			allErrs = append(allErrs, check(name, fldPath.Index(i))...)
		}
		seen.Insert(name)
	}
	return allErrs
}

// ValidateSessionUnderPolicy checks a new session against what the policy
// that governs it asks beyond the server's flags: its maxTTL and reason.
func ValidateSessionUnderPolicy(s *clustergate.Session, p *clustergate.SessionApprovalPolicy) field.ErrorList {
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	if t := p.Spec.MaxTTL; t != nil && s.Spec.TTL.Duration > t.Duration {
		allErrs = append(allErrs, field.Invalid(specPath.Child("ttl"), s.Spec.TTL.Duration.String(),
			fmt.Sprintf("must be at most %s under SessionApprovalPolicy %q", t.Duration, p.Name)))
	}
	if p.Spec.RequireReason && s.Spec.Reason == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("reason"),
			fmt.Sprintf("SessionApprovalPolicy %q requires a reason, such as an incident or ticket", p.Name)))
	}
	return allErrs
}
