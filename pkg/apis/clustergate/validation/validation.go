// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package validation checks clustergate objects on create and update and
// returns every problem as a field error with its path.
package validation

import (
	"fmt"
	"net/url"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// SessionLimits holds the server's limits that every Session must respect.
type SessionLimits struct {
	// MinTTL is the shortest allowed spec.ttl.
	MinTTL time.Duration
	// MaxTTL is the longest allowed spec.ttl.
	MaxTTL time.Duration
	// MaxLifetime caps how late an extension may move a session's expiry,
	// counted from the start of its access window (WindowStart).
	MaxLifetime time.Duration
	// AccessGroups are the allowed values of spec.accessLevel.group.
	AccessGroups sets.Set[string]
	// WholeTargetGroups are the access groups a session may hold on its
	// whole target, unscoped; nil is all of AccessGroups.
	WholeTargetGroups sets.Set[string]
	// ScopableGroups are the access groups a session may hold in some
	// namespaces of its target, through spec.scope.
	ScopableGroups sets.Set[string]
	// ApprovalGroups are the access groups whose sessions, and their
	// extensions, wait for an approver.
	ApprovalGroups sets.Set[string]
	// ApprovalTimeout is how long the opening of a session may wait for
	// approval before the session is removed.
	ApprovalTimeout time.Duration
	// RequireReason refuses sessions without spec.reason.
	RequireReason bool
	// IdleTimeout is the spec.idleTimeout of sessions that ask for none
	// (DefaultIdleTimeout); 0 is none.
	IdleTimeout time.Duration
	// MaxIdleTimeout bounds spec.idleTimeout and, when set, refuses none;
	// 0 is no bound.
	MaxIdleTimeout time.Duration
	// LastUsedInterval is how often, at most, the replicas write a
	// session's status.lastUsedAt between them; 0 is
	// DefaultLastUsedInterval. The shortest idle timeout is four of it.
	LastUsedInterval time.Duration
}

// MaxReasonLength bounds spec.reason and the reason of an approval: a
// ticket and a sentence, not a document.
const MaxReasonLength = 512

// MaxScopeNamespaces bounds spec.scope.namespaces: a session is for an
// incident in an application, not a tour of the cluster, and each
// namespace is a RoleBinding on the target.
const MaxScopeNamespaces = 16

// maxApprovals bounds status.approvals: the opening and the extensions of
// one session.
const maxApprovals = 32

// DefaultSessionLimits is the policy of a server started without the
// --session-* flags.
func DefaultSessionLimits() SessionLimits {
	return SessionLimits{
		MinTTL:           10 * time.Minute,
		MaxTTL:           24 * time.Hour,
		MaxLifetime:      24 * time.Hour,
		AccessGroups:     sets.New(v1alpha1.AccessLevelAdmin, v1alpha1.AccessLevelViewer),
		ScopableGroups:   sets.New(v1alpha1.AccessLevelAdmin, v1alpha1.AccessLevelViewer),
		ApprovalGroups:   sets.New[string](),
		ApprovalTimeout:  time.Hour,
		LastUsedInterval: DefaultLastUsedInterval,
	}
}

// Validate reports a policy that no Session could satisfy.
func (p SessionLimits) Validate() error {
	switch {
	case p.MinTTL <= 0:
		return fmt.Errorf("session minimum TTL must be positive, got %s", p.MinTTL)
	case p.MaxTTL < p.MinTTL:
		return fmt.Errorf("session maximum TTL %s is below the minimum %s", p.MaxTTL, p.MinTTL)
	case p.AccessGroups.Len() == 0:
		return fmt.Errorf("at least one session access group is needed")
	case p.MaxLifetime < p.MaxTTL:
		return fmt.Errorf("session maximum lifetime %s is below the maximum TTL %s", p.MaxLifetime, p.MaxTTL)
	case !p.AccessGroups.IsSuperset(p.ScopableGroups) || p.WholeTargetGroups != nil && !p.AccessGroups.IsSuperset(p.WholeTargetGroups):
		return fmt.Errorf("session scopable groups %v and whole-target groups %v are not all access groups %v",
			sets.List(p.ScopableGroups), sets.List(p.WholeTargetGroups), sets.List(p.AccessGroups))
	case !p.AccessGroups.IsSuperset(p.ApprovalGroups):
		return fmt.Errorf("session approval groups %v are not all access groups %v", sets.List(p.ApprovalGroups), sets.List(p.AccessGroups))
	case p.ApprovalTimeout <= 0:
		return fmt.Errorf("session approval timeout must be positive, got %s", p.ApprovalTimeout)
	}
	return p.validateIdlePolicy()
}

// NeedsApproval reports whether sessions of an access group wait for an
// approver.
func (p SessionLimits) NeedsApproval(group string) bool { return p.ApprovalGroups.Has(group) }

// nameIsDNSLabel is used for object names, which end up in URL paths, label
// values and policy names, and so are held to 63 characters.
var nameIsDNSLabel = apimachineryvalidation.NameIsDNSLabel

// ValidateSession validates a new Session.
func ValidateSession(s *clustergate.Session, policy SessionLimits) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&s.ObjectMeta, true, nameIsDNSLabel, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSessionSpec(&s.Spec, policy, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSessionUpdate validates an update of a Session's metadata and spec:
// the spec may not change at all.
func ValidateSessionUpdate(newSession, oldSession *clustergate.Session) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSession.ObjectMeta, &oldSession.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newSession.Spec, oldSession.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSessionStatusUpdate validates an update of a Session's status
// through the status subresource at now: expiresAt, the approvals, the
// approval policy and deletedBy are not the status writer's to change, and lastUsedAt only moves later while
// the session may be used.
func ValidateSessionStatusUpdate(newSession, oldSession *clustergate.Session, now time.Time) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSession.ObjectMeta, &oldSession.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	status, oldStatus := &newSession.Status, &oldSession.Status
	if !apiequality.Semantic.DeepEqual(status.ExpiresAt, oldStatus.ExpiresAt) {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("expiresAt"),
			"is set at creation or approval and moved only through the extension subresource"))
	}
	if !apiequality.Semantic.DeepEqual(status.Approvals, oldStatus.Approvals) {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("approvals"),
			"change only through the approval and extension subresources"))
	}
	if !apiequality.Semantic.DeepEqual(status.ApprovalPolicy, oldStatus.ApprovalPolicy) {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("approvalPolicy"),
			"is fixed at creation: the session keeps the policy that governed it then"))
	}
	if status.DeletedBy != oldStatus.DeletedBy {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("deletedBy"),
			"is stamped by the server with the user who deletes the session"))
	}
	allErrs = append(allErrs, validateLastUsedAt(newSession, oldSession, now, statusPath.Child("lastUsedAt"))...)
	if status.BackendURL != "" {
		allErrs = append(allErrs, validateHTTPSURL(status.BackendURL, statusPath.Child("backendURL"))...)
	}
	allErrs = append(allErrs, validateObservedStatus(status.ObservedGeneration, status.Conditions, statusPath)...)
	return allErrs
}

func validateSessionSpec(spec *clustergate.SessionSpec, policy SessionLimits, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	ttlPath := fldPath.Child("ttl")
	switch ttl := spec.TTL.Duration; {
	case ttl == 0:
		allErrs = append(allErrs, field.Required(ttlPath, "a session needs a ttl, for example 1h"))
	case ttl < 0:
		allErrs = append(allErrs, field.Invalid(ttlPath, spec.TTL.Duration.String(), "must be positive"))
	case ttl < policy.MinTTL:
		allErrs = append(allErrs, field.Invalid(ttlPath, spec.TTL.Duration.String(), fmt.Sprintf("must be at least %s", policy.MinTTL)))
	case ttl > policy.MaxTTL:
		allErrs = append(allErrs, field.Invalid(ttlPath, spec.TTL.Duration.String(), fmt.Sprintf("must be at most %s", policy.MaxTTL)))
	}

	ownerPath := fldPath.Child("owner")
	if spec.Owner.Username == "" {
		allErrs = append(allErrs, field.Required(ownerPath.Child("username"), ""))
	}
	for i, g := range spec.Owner.Groups {
		if g == "" {
			allErrs = append(allErrs, field.Invalid(ownerPath.Child("groups").Index(i), g, "may not be empty"))
		}
	}

	groupPath := fldPath.Child("accessLevel", "group")
	switch g := spec.AccessLevel.Group; {
	case g == "":
		allErrs = append(allErrs, field.Required(groupPath, ""))
	case !policy.AccessGroups.Has(g):
		allErrs = append(allErrs, field.NotSupported(groupPath, g, sets.List(policy.AccessGroups)))
	}

	allErrs = append(allErrs, validateScope(spec.Scope, spec.AccessLevel.Group, policy, fldPath.Child("scope"))...)
	allErrs = append(allErrs, validateSessionTarget(&spec.Target, fldPath.Child("target"))...)
	allErrs = append(allErrs, validateIdleTimeout(spec.IdleTimeout, policy, fldPath.Child("idleTimeout"))...)

	reasonPath := fldPath.Child("reason")
	if spec.Reason == "" && policy.RequireReason {
		allErrs = append(allErrs, field.Required(reasonPath, "the server requires a reason for every session (--session-require-reason), such as an incident or ticket"))
	}
	allErrs = append(allErrs, validateReason(spec.Reason, reasonPath)...)
	return allErrs
}

// validateScope checks spec.scope against the access level: a level
// without a namespaced role cannot be scoped, one without a whole-target
// group must be.
func validateScope(scope *clustergate.SessionScope, level string, policy SessionLimits, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	known := policy.AccessGroups.Has(level)
	if scope == nil {
		if known && policy.WholeTargetGroups != nil && !policy.WholeTargetGroups.Has(level) {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespaces"),
				fmt.Sprintf("access level %q holds only in namespaces: name them", level)))
		}
		return allErrs
	}
	nsPath := fldPath.Child("namespaces")
	switch n := len(scope.Namespaces); {
	case n == 0:
		allErrs = append(allErrs, field.Required(nsPath, "a scope names at least one namespace; leave scope out for the whole target"))
	case n > MaxScopeNamespaces:
		allErrs = append(allErrs, field.TooMany(nsPath, n, MaxScopeNamespaces))
	}
	seen := sets.New[string]()
	for i, ns := range scope.Namespaces {
		allErrs = append(allErrs, validateDNSLabel(ns, nsPath.Index(i))...)
		if seen.Has(ns) {
			allErrs = append(allErrs, field.Duplicate(nsPath.Index(i), ns))
		}
		seen.Insert(ns)
	}
	if known && !policy.ScopableGroups.Has(level) {
		allErrs = append(allErrs, field.Forbidden(fldPath,
			fmt.Sprintf("access level %q has no namespaced role on the server and holds only on the whole target", level)))
	}
	return allErrs
}

func validateReason(reason string, fldPath *field.Path) field.ErrorList {
	if len(reason) > MaxReasonLength {
		return field.ErrorList{field.TooLong(fldPath, "", MaxReasonLength)}
	}
	return nil
}

func validateSessionTarget(target *clustergate.SessionTarget, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case target.Shoot == nil && target.Cluster == nil:
		return append(allErrs, field.Required(fldPath, "exactly one of shoot or cluster is required"))
	case target.Shoot != nil && target.Cluster != nil:
		return append(allErrs, field.Forbidden(fldPath.Child("cluster"), "may not be set together with shoot"))
	case target.Shoot != nil:
		allErrs = append(allErrs, validateShootReference(target.Shoot, fldPath.Child("shoot"))...)
	default:
		clusterPath := fldPath.Child("cluster")
		allErrs = append(allErrs, validateDNSLabel(target.Cluster.KubeconfigSecretRef.Name, clusterPath.Child("kubeconfigSecretRef", "name"))...)
		allErrs = append(allErrs, utilvalidation.IsDomainPrefixedPath(clusterPath.Child("signerName"), target.Cluster.SignerName)...)
	}
	return allErrs
}

// ValidateGardenerClusterKubeconfig validates a new GardenerClusterKubeconfig.
func ValidateGardenerClusterKubeconfig(k *clustergate.GardenerClusterKubeconfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&k.ObjectMeta, true, nameIsDNSLabel, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateShootReference(&k.Spec.Shoot, specPath.Child("shoot"))...)

	secretPath := specPath.Child("kubeconfig", "secret")
	secret := k.Spec.Kubeconfig.Secret
	allErrs = append(allErrs, validateDNSLabel(secret.Name, secretPath.Child("name"))...)
	// A user who may create the object in one namespace must not make the
	// server write a kubeconfig into another.
	if secret.Namespace != k.Namespace {
		allErrs = append(allErrs, field.Invalid(secretPath.Child("namespace"), secret.Namespace,
			fmt.Sprintf("must be the object's own namespace %q", k.Namespace)))
	}
	keyPath := secretPath.Child("key")
	if secret.Key == "" {
		return append(allErrs, field.Required(keyPath, ""))
	}
	for _, msg := range utilvalidation.IsConfigMapKey(secret.Key) {
		allErrs = append(allErrs, field.Invalid(keyPath, secret.Key, msg))
	}
	return allErrs
}

// ValidateGardenerClusterKubeconfigUpdate validates an update of a
// GardenerClusterKubeconfig's metadata and spec. The Secret may move; the
// Shoot may not change, since the kubeconfig in the Secret belongs to it.
func ValidateGardenerClusterKubeconfigUpdate(newK, oldK *clustergate.GardenerClusterKubeconfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newK.ObjectMeta, &oldK.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateGardenerClusterKubeconfig(newK)...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newK.Spec.Shoot, oldK.Spec.Shoot, field.NewPath("spec", "shoot"))...)
	return allErrs
}

// ValidateGardenerClusterKubeconfigStatusUpdate validates an update of a
// GardenerClusterKubeconfig's status.
func ValidateGardenerClusterKubeconfigStatusUpdate(newK, oldK *clustergate.GardenerClusterKubeconfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newK.ObjectMeta, &oldK.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	switch newK.Status.State {
	case "", clustergate.KubeconfigStateReady, clustergate.KubeconfigStateError:
	default:
		allErrs = append(allErrs, field.NotSupported(statusPath.Child("state"), newK.Status.State,
			[]clustergate.KubeconfigState{clustergate.KubeconfigStateReady, clustergate.KubeconfigStateError}))
	}
	allErrs = append(allErrs, validateObservedStatus(newK.Status.ObservedGeneration, newK.Status.Conditions, statusPath)...)
	return allErrs
}

func validateObservedStatus(observedGeneration int64, conditions []metav1.Condition, statusPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateConditions(conditions, statusPath.Child("conditions"))
	if observedGeneration < 0 {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("observedGeneration"), observedGeneration, "may not be negative"))
	}
	return allErrs
}

// validateShootReference checks a Shoot named by name and, optionally, by
// its Gardener project: both are DNS labels, as Gardener requires. The
// project is a name, never a namespace: objects, locks, policies and
// grants compare one spelling of it, and Gardener alone knows a project's
// namespace (spec.namespace of its Project need not be garden-<name>).
func validateShootReference(ref *clustergate.ShootReference, fldPath *field.Path) field.ErrorList {
	allErrs := validateDNSLabel(ref.Name, fldPath.Child("name"))
	if ref.Project != "" {
		allErrs = append(allErrs, validateDNSLabel(ref.Project, fldPath.Child("project"))...)
	}
	return allErrs
}

func validateDNSLabel(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateHTTPSURL(value string, fldPath *field.Path) field.ErrorList {
	u, err := url.Parse(value)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(fldPath, value, err.Error())}
	case u.Scheme != "https" || u.Host == "":
		return field.ErrorList{field.Invalid(fldPath, value, "must be an https URL with a host")}
	}
	return nil
}
