// Package validation checks clustergate objects on create and update and
// returns every problem as a field error with its path.
package validation

import (
	"fmt"
	"net/url"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
)

// SessionPolicy holds the server's limits that every Session must respect.
type SessionPolicy struct {
	// MinTTL is the shortest allowed spec.ttl.
	MinTTL time.Duration
	// MaxTTL is the longest allowed spec.ttl.
	MaxTTL time.Duration
	// AccessGroups are the allowed values of spec.accessLevel.group.
	AccessGroups sets.Set[string]
}

// DefaultSessionPolicy is the policy of a server started without the
// --session-* flags.
func DefaultSessionPolicy() SessionPolicy {
	return SessionPolicy{
		MinTTL:       10 * time.Minute,
		MaxTTL:       24 * time.Hour,
		AccessGroups: sets.New("admin", "viewer"),
	}
}

// Validate reports a policy that no Session could satisfy.
func (p SessionPolicy) Validate() error {
	switch {
	case p.MinTTL <= 0:
		return fmt.Errorf("session minimum TTL must be positive, got %s", p.MinTTL)
	case p.MaxTTL < p.MinTTL:
		return fmt.Errorf("session maximum TTL %s is below the minimum %s", p.MaxTTL, p.MinTTL)
	case p.AccessGroups.Len() == 0:
		return fmt.Errorf("at least one session access group is needed")
	}
	return nil
}

// ExpiresAt is when a session created at creation with the given TTL
// expires, at the one-second precision that object timestamps are stored in.
func ExpiresAt(creation time.Time, ttl time.Duration) time.Time {
	return creation.Add(ttl).Truncate(time.Second)
}

// nameIsDNSLabel is used for object names, which end up in URL paths, label
// values and policy names, and so are held to 63 characters.
var nameIsDNSLabel = apimachineryvalidation.NameIsDNSLabel

// ValidateSession validates a new Session.
func ValidateSession(s *clustergate.Session, policy SessionPolicy) field.ErrorList {
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

// ValidateSessionStatusUpdate validates an update of a Session's status:
// expiresAt, once set, equals creationTimestamp + ttl and never changes.
func ValidateSessionStatusUpdate(newSession, oldSession *clustergate.Session) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSession.ObjectMeta, &oldSession.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	status, oldStatus := &newSession.Status, &oldSession.Status

	expiresPath := statusPath.Child("expiresAt")
	switch {
	case oldStatus.ExpiresAt != nil && status.ExpiresAt == nil:
		allErrs = append(allErrs, field.Forbidden(expiresPath, "may not be removed once set"))
	case oldStatus.ExpiresAt != nil && !status.ExpiresAt.Equal(oldStatus.ExpiresAt):
		allErrs = append(allErrs, field.Invalid(expiresPath, status.ExpiresAt, "field is immutable once set"))
	case status.ExpiresAt != nil:
		want := ExpiresAt(newSession.CreationTimestamp.Time, newSession.Spec.TTL.Duration)
		if !status.ExpiresAt.Time.Equal(want) {
			allErrs = append(allErrs, field.Invalid(expiresPath, status.ExpiresAt,
				fmt.Sprintf("must be creationTimestamp + ttl (%s)", want.UTC().Format(time.RFC3339))))
		}
	}
	if status.BackendURL != "" {
		allErrs = append(allErrs, validateHTTPSURL(status.BackendURL, statusPath.Child("backendURL"))...)
	}
	allErrs = append(allErrs, validateObservedStatus(status.ObservedGeneration, status.Conditions, statusPath)...)
	return allErrs
}

func validateSessionSpec(spec *clustergate.SessionSpec, policy SessionPolicy, fldPath *field.Path) field.ErrorList {
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

	allErrs = append(allErrs, validateSessionTarget(&spec.Target, fldPath.Child("target"))...)
	return allErrs
}

func validateSessionTarget(target *clustergate.SessionTarget, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case target.Shoot == nil && target.Cluster == nil:
		return append(allErrs, field.Required(fldPath, "exactly one of shoot or cluster is required"))
	case target.Shoot != nil && target.Cluster != nil:
		return append(allErrs, field.Forbidden(fldPath.Child("cluster"), "may not be set together with shoot"))
	case target.Shoot != nil:
		allErrs = append(allErrs, validateDNSLabel(target.Shoot.Name, fldPath.Child("shoot", "name"))...)
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
	allErrs = append(allErrs, validateDNSLabel(k.Spec.Shoot.Name, specPath.Child("shoot", "name"))...)

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
