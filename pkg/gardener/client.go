// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gardener is a thin client of Gardener: it resolves projects to
// their namespaces (projects.go), asks Gardener for short-lived admin
// kubeconfigs of the projects' Shoots through the shoots/adminkubeconfig
// subresource, and names the groups Gardener binds on every Shoot.
package gardener

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	authenticationv1alpha1 "github.com/gardener/gardener/pkg/apis/authentication/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// MinExpiration is the shortest validity Gardener issues a kubeconfig for.
const MinExpiration = 10 * time.Minute

// Config says how to reach Gardener.
type Config struct {
	// Kubeconfig is the path of a kubeconfig for the Gardener API server.
	Kubeconfig string
	// Project is the default Gardener project: that of Shoots named without
	// one outside a project's namespace, and the one the probe lists.
	Project string
	// QPS and Burst bound the requests sent to Gardener.
	QPS   float32
	Burst int
	// Timeout bounds one request.
	Timeout time.Duration
	// ProbeInterval is how often Probe asks whether Gardener answers; zero
	// turns the probe off.
	ProbeInterval time.Duration
}

// DefaultConfig is the pace and the probe that a few thousand objects need
// of Gardener; no project, so the kubeconfig controller is off.
func DefaultConfig() Config {
	return Config{QPS: 20, Burst: 40, Timeout: 30 * time.Second, ProbeInterval: 30 * time.Second}
}

// Validate checks the settings, naming the flags that give them.
func (c Config) Validate() []error {
	var errs []error
	if c.Project != "" && c.Kubeconfig == "" {
		errs = append(errs, fmt.Errorf("--gardener-kubeconfig is required with --gardener-project"))
	}
	return errs
}

// AccessLevel is a level of access Gardener grants on a Shoot.
type AccessLevel string

const (
	// Admin is the level of shoots/adminkubeconfig.
	Admin AccessLevel = "admin"
	// Viewer is the level of shoots/viewerkubeconfig.
	Viewer AccessLevel = "viewer"
)

// ShootGroup is the group Gardener puts a project member's kubeconfig of a
// Shoot in at the given access level, and binds on every Shoot: admins to
// cluster-admin, viewers to gardener.cloud:system:read-only (read access to
// everything but Secrets and other resources the Shoot encrypts).
func ShootGroup(level AccessLevel) string {
	if level == Admin {
		return v1beta1constants.ShootProjectAdminsGroupName
	}
	return v1beta1constants.ShootProjectViewersGroupName
}

// Kubeconfig is a kubeconfig Gardener issued.
type Kubeconfig struct {
	// Data is the kubeconfig file.
	Data []byte
	// ExpiresAt is when its credentials expire, as Gardener says.
	ExpiresAt time.Time
}

// Reason classifies a failed request, for conditions and metrics.
type Reason string

const (
	// ShootNotFound means the Shoot does not exist in the project.
	ShootNotFound Reason = "ShootNotFound"
	// Forbidden means Gardener refused the server's identity.
	Forbidden Reason = "Forbidden"
	// ShootNotReady means Gardener cannot issue a kubeconfig for the Shoot yet,
	// for example because it advertises no API server address.
	ShootNotReady Reason = "ShootNotReady"
	// GardenerUnavailable means Gardener could not be reached or failed.
	GardenerUnavailable Reason = "GardenerUnavailable"
)

// Error is a failed kubeconfig request with its Reason.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of err, or GardenerUnavailable for an error
// that carries none.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return GardenerUnavailable
}

// Shoot names a Shoot of a Gardener project.
type Shoot struct {
	Project, Name string
}

// String is "<project>/<name>", as messages name a Shoot.
func (s Shoot) String() string { return s.Project + "/" + s.Name }

// Requester asks Gardener for kubeconfigs: what the controllers need of
// Gardener. *Client is the real one.
type Requester interface {
	RequestKubeconfig(ctx context.Context, shoot Shoot, expiration time.Duration) (Kubeconfig, error)
}

var _ Requester = &Client{}

// Client requests kubeconfigs for the Shoots of any project, in the
// project's namespace as its Project object names it.
type Client struct {
	rest rest.Interface
	// Projects resolves and keeps the projects' namespaces.
	Projects *Projects
	// project is the default project, which the probe lists.
	project string
}

// NewClient returns a client whose default project is that of cfg.
func NewClient(cfg Config) (*Client, error) {
	if cfg.Project == "" {
		return nil, errors.New("a Gardener project is required")
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the Gardener kubeconfig: %w", err)
	}
	restConfig.QPS, restConfig.Burst, restConfig.Timeout = cfg.QPS, cfg.Burst, cfg.Timeout
	return NewClientForConfig(restConfig, cfg.Project)
}

// NewClientForConfig returns a client with the default project project
// that reaches Gardener with restConfig.
func NewClientForConfig(restConfig *rest.Config, project string) (*Client, error) {
	c := rest.CopyConfig(restConfig)
	c.APIPath = "/apis"
	c.GroupVersion = &schema.GroupVersion{Group: "core.gardener.cloud", Version: "v1beta1"}
	c.NegotiatedSerializer = serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(nil)}
	c.ContentType = "application/json"
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	// Every series of the default project exists from the start at zero,
	// so that rate() and increase() count its first request of each kind
	// too; those of other projects appear with their first request.
	initMetrics(project)
	return &Client{rest: client, Projects: NewProjects(client, clock.RealClock{}), project: project}, nil
}

// RequestKubeconfig asks Gardener for an admin kubeconfig of shoot, valid
// for expiration (at least MinExpiration), in the namespace of the shoot's
// project. The expiry is read from Gardener's answer, which may cap the
// validity. A Shoot without a project, of an object stored before
// projects were named, is of the default project.
func (c *Client) RequestKubeconfig(ctx context.Context, shoot Shoot, expiration time.Duration) (_ Kubeconfig, err error) {
	shoot.Project = cmp.Or(shoot.Project, c.project)
	namespace, err := c.Projects.Namespace(ctx, shoot.Project)
	if err != nil {
		return Kubeconfig{}, err
	}
	seconds := int64(max(expiration, MinExpiration) / time.Second)
	defer func(start time.Time) { observe(operationAdmin, shoot.Project, start, err) }(time.Now())
	body, err := json.Marshal(authenticationv1alpha1.AdminKubeconfigRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: authenticationv1alpha1.SchemeGroupVersion.String(), Kind: "AdminKubeconfigRequest"},
		Spec:     authenticationv1alpha1.AdminKubeconfigRequestSpec{ExpirationSeconds: &seconds},
	})
	if err != nil {
		return Kubeconfig{}, err
	}
	raw, err := c.rest.Post().Namespace(namespace).Resource("shoots").Name(shoot.Name).SubResource(operationAdmin).
		Body(body).Do(ctx).Raw()
	if err != nil {
		return Kubeconfig{}, classify(shoot, err)
	}
	var answer authenticationv1alpha1.AdminKubeconfigRequest
	if err := json.Unmarshal(raw, &answer); err != nil {
		return Kubeconfig{}, &Error{Reason: GardenerUnavailable, Err: fmt.Errorf("decoding Gardener's answer: %w", err)}
	}
	kc := Kubeconfig{Data: answer.Status.Kubeconfig, ExpiresAt: answer.Status.ExpirationTimestamp.Time}
	if len(kc.Data) == 0 {
		return Kubeconfig{}, &Error{Reason: GardenerUnavailable, Err: errors.New("Gardener answered without a kubeconfig")} //nolint:staticcheck // ST1005: Gardener is a name.
	}
	if kc.ExpiresAt.IsZero() {
		if kc.ExpiresAt, err = CertificateExpiry(kc.Data); err != nil {
			return Kubeconfig{}, &Error{Reason: GardenerUnavailable, Err: err}
		}
	}
	return kc, nil
}

// ShootLabels returns the labels of shoot's Shoot object, which
// SessionApprovalPolicies may select targets by. A Shoot that does not
// exist has none: a session to it never gets Ready, and no policy must
// fail its create for that.
func (c *Client) ShootLabels(ctx context.Context, shoot Shoot) (_ map[string]string, err error) {
	shoot.Project = cmp.Or(shoot.Project, c.project)
	namespace, err := c.Projects.Namespace(ctx, shoot.Project)
	if err != nil {
		return nil, err
	}
	defer func(start time.Time) { observe(operationShoot, shoot.Project, start, err) }(time.Now())
	raw, err := c.rest.Get().Namespace(namespace).Resource("shoots").Name(shoot.Name).Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(shoot, err)
	}
	// Only the metadata: the rest of a Shoot is large and of no interest.
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, &Error{Reason: GardenerUnavailable, Err: fmt.Errorf("decoding Gardener's Shoot %s: %w", shoot, err)}
	}
	return meta.Labels, nil
}

func classify(shoot Shoot, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return &Error{Reason: ShootNotFound, Err: fmt.Errorf("shoot %q not found in project %q", shoot.Name, shoot.Project)}
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &Error{Reason: Forbidden, Err: err}
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return &Error{Reason: ShootNotReady, Err: err}
	}
	// Connection failures, timeouts and server errors alike.
	return &Error{Reason: GardenerUnavailable, Err: err}
}

// CertificateExpiry returns when the client certificate of the kubeconfig's
// current user expires.
func CertificateExpiry(kubeconfig []byte) (time.Time, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing the kubeconfig: %w", err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return time.Time{}, fmt.Errorf("the kubeconfig has no current context")
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || len(user.ClientCertificateData) == 0 {
		return time.Time{}, fmt.Errorf("the kubeconfig's user has no client certificate")
	}
	block, _ := pem.Decode(user.ClientCertificateData)
	if block == nil {
		return time.Time{}, fmt.Errorf("the kubeconfig's client certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, err
	}
	return cert.NotAfter, nil
}
