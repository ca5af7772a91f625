// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package app holds the clustergate-apiserver command: its flags, their
// checks, and the run of the server they configure.
package app

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	netutils "k8s.io/utils/net"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
)

// Options are the flags of clustergate-apiserver.
type Options struct {
	// RecommendedOptions are the generic server's flags: etcd, serving,
	// delegated authentication and authorization, admission, audit, features.
	RecommendedOptions *genericoptions.RecommendedOptions
	// Server is clustergate's own settings. Flags that give a setting as it
	// is are bound to its fields; Complete fills in the rest from the flag
	// forms below.
	Server apiserver.ExtraConfig

	// DataDir holds the embedded etcd's data and generated serving certificates.
	DataDir string
	// ShutdownDelay is how long the server keeps serving after a stop
	// signal while /readyz fails, so that endpoints drop it before it stops.
	ShutdownDelay time.Duration
	// SessionMinTTL is the shortest TTL a Session may ask for.
	SessionMinTTL time.Duration
	// SessionMaxTTL is the longest TTL a Session may ask for.
	SessionMaxTTL time.Duration
	// SessionAccessGroups are the access groups a Session may ask for,
	// without SessionAccessConfigFile.
	SessionAccessGroups []string
	// SessionAccessConfigFile holds the access levels and deny rules.
	SessionAccessConfigFile string
	// SessionLifecycle holds the --session-* flags of approval, extension
	// and justification; sessionLimits merges them with the TTLs.
	SessionLifecycle validation.SessionLimits
	// sessionApprovalGroups is the flag form of SessionLifecycle.ApprovalGroups.
	sessionApprovalGroups []string
	// istioSelector is the flag form of Server.Controllers.Sessions.IstioPolicy.Selector.
	istioSelector string

	// embeddedEtcdURL is set by Complete when the server runs its own etcd.
	embeddedEtcdURL string
}

// NewOptions returns the options with their defaults.
func NewOptions() *Options {
	policy := validation.DefaultSessionLimits()
	o := &Options{
		RecommendedOptions:  apiserver.NewRecommendedOptions(),
		DataDir:             "clustergate-data",
		SessionMinTTL:       policy.MinTTL,
		SessionMaxTTL:       policy.MaxTTL,
		SessionAccessGroups: sets.List(policy.AccessGroups),
		SessionLifecycle:    validation.SessionLimits{ApprovalTimeout: policy.ApprovalTimeout, LastUsedInterval: policy.LastUsedInterval},
		istioSelector:       "istio=clustergate-data-plane",
	}
	// Field by field: the settings' types belong to the server's parts,
	// which the command leaves to pkg/apiserver.
	s := &o.Server
	s.SessionMaxPerOwner = 5
	s.ProxyLimits.PerSession, s.ProxyLimits.PerOwner = 100, 250
	s.ModeratorWait = 2 * time.Minute
	s.ClientQPS, s.ClientBurst = 100, 200
	c := &s.Controllers
	c.Gardener = gardener.Config{QPS: 20, Burst: 40, Timeout: 30 * time.Second, ProbeInterval: 30 * time.Second}
	c.GardenerClusterKubeconfigs.RotationRatio, c.GardenerClusterKubeconfigs.ConflictRecheck, c.GardenerClusterKubeconfigs.GardenerRetry = 0.6, 5*time.Minute, 5*time.Minute
	c.GardenerClusterKubeconfigs.Expiration, c.GardenerClusterKubeconfigs.Workers = 24*time.Hour, 10
	c.Sessions.CSRPoll, c.Sessions.RetryAfter = 2*time.Second, 30*time.Second
	c.Sessions.Namespace, c.Sessions.IstioPolicy.Port, c.Sessions.Workers = serverNamespace(), 8444, 10
	c.Sessions.OrphanSweepInterval = 5 * time.Minute // the controller's own default
	c.LeaderElect, c.LeaseNamespace = true, serverNamespace()
	c.LockRetention = 7 * 24 * time.Hour
	o.defaultRecording()
	return o
}

// serverNamespace is the namespace the server runs in.
func serverNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "clustergate-system"
}

// Complete fills in what the flags leave open: the settings that flags
// give in another form, an embedded etcd when no --etcd-servers are given,
// and standalone mode when there is no core cluster.
func (o *Options) Complete() error {
	access, err := o.sessionAccess()
	if err != nil {
		return err
	}
	o.Server.SessionAccess = access
	o.Server.SessionLimits = o.sessionLimits()
	o.Server.Controllers.Sessions.ApprovalTimeout = o.SessionLifecycle.ApprovalTimeout
	o.completeRecording()
	selector, err := labels.ConvertSelectorToLabelsMap(o.istioSelector)
	if err == nil {
		o.Server.Controllers.Sessions.IstioPolicy.Selector = selector
	}
	if len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0 {
		u, err := embeddedetcd.FreeLocalURL()
		if err != nil {
			return fmt.Errorf("choosing the embedded etcd's address: %w", err)
		}
		o.embeddedEtcdURL = u
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{u}
	}

	if o.RecommendedOptions.CoreAPI.CoreAPIKubeconfigPath == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		// Without a core cluster there is nobody to delegate authentication,
		// authorization or admission to: only the loopback client and client
		// certificates in system:masters get in.
		o.Server.Standalone = true
		o.RecommendedOptions.CoreAPI = nil
		o.RecommendedOptions.Admission = nil
		o.RecommendedOptions.Authentication.RemoteKubeConfigFileOptional = true
		o.RecommendedOptions.Authorization.RemoteKubeConfigFileOptional = true
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	s, c := &o.Server, &o.Server.Controllers
	errs := o.RecommendedOptions.Validate()
	if err := o.sessionLimits().Validate(); err != nil {
		errs = append(errs, err)
	}
	// The generic server reads port 0 as "serve no HTTPS": an aggregated
	// server without its listener has nothing to offer and no loopback
	// client for its controllers.
	if o.RecommendedOptions.SecureServing.BindPort == 0 {
		errs = append(errs, fmt.Errorf("--secure-port must be a port between 1 and 65535: clustergate cannot run without serving HTTPS"))
	}
	if o.embeddedEtcdURL != "" && o.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir is required when --etcd-servers is empty"))
	}
	if c.Gardener.Project != "" && c.Gardener.Kubeconfig == "" {
		errs = append(errs, fmt.Errorf("--gardener-kubeconfig is required with --gardener-project"))
	}
	if r := c.GardenerClusterKubeconfigs.RotationRatio; r <= 0 || r >= 1 {
		errs = append(errs, fmt.Errorf("--kubeconfig-rotation-ratio must lie between 0 and 1, got %v", r))
	}
	if c.GardenerClusterKubeconfigs.Expiration < gardener.MinExpiration {
		errs = append(errs, fmt.Errorf("--kubeconfig-expiration must be at least %s", gardener.MinExpiration))
	}
	if c.Sessions.IstioPolicy.Namespace != "" {
		if s.DataPlane.AuthenticationConfigFile == "" {
			errs = append(errs, fmt.Errorf("--istio-namespace needs --data-plane-authentication-config: the policies match its issuers and claims"))
		}
		if p := c.Sessions.IstioPolicy.Port; p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--istio-gateway-port must be a port, got %d", p))
		} else if p == o.RecommendedOptions.SecureServing.BindPort || strings.HasSuffix(s.DataPlane.Address, ":"+strconv.Itoa(p)) {
			// Where Istio drops a DENY rule's HTTP conditions the port
			// remains: on a port of the server's own, a policy that
			// selected the server by mistake would cut it off.
			errs = append(errs, fmt.Errorf("--istio-gateway-port %d is a port the server listens on; the gateway's data-plane port must be another", p))
		}
	}
	if _, err := labels.ConvertSelectorToLabelsMap(o.istioSelector); err != nil || o.istioSelector == "" {
		errs = append(errs, fmt.Errorf("--istio-workload-selector must be key=value pairs: %q", o.istioSelector))
	}
	if c.Sessions.OrphanSweepInterval < time.Second {
		errs = append(errs, fmt.Errorf("--session-orphan-sweep-interval must be at least 1s"))
	}
	if c.LockRetention < 0 {
		errs = append(errs, fmt.Errorf("--session-lock-retention may not be negative"))
	}
	if s.SessionMaxPerOwner < 0 {
		errs = append(errs, fmt.Errorf("--session-max-per-owner may not be negative"))
	}
	if s.ProxyLimits.PerSession < 0 || s.ProxyLimits.PerOwner < 0 {
		errs = append(errs, fmt.Errorf("proxy limits may not be negative"))
	}
	if s.ModeratorWait < time.Second {
		errs = append(errs, fmt.Errorf("--session-moderator-wait must be at least 1s"))
	}
	if s.SessionKubeconfig.ExternalURL != "" {
		if u, err := url.Parse(s.SessionKubeconfig.ExternalURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--external-url must be an https URL, got %q", s.SessionKubeconfig.ExternalURL))
		}
	}
	if s.DataPlane.Address != "" || s.DataPlane.AuthenticationConfigFile != "" {
		if err := apiserver.ValidateDataPlaneAuthentication(s.DataPlane); err != nil {
			errs = append(errs, fmt.Errorf("--data-plane-authentication-config: %w", err))
		}
	}
	if (s.DataPlane.TLSCertFile == "") != (s.DataPlane.TLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("--data-plane-tls-cert-file and --data-plane-tls-private-key-file go together"))
	}
	if s.SessionKubeconfig.DataPlaneURL != "" {
		if u, err := url.Parse(s.SessionKubeconfig.DataPlaneURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url must be an https URL, got %q", s.SessionKubeconfig.DataPlaneURL))
		}
		// Without a plugin that fetches the owner's JWT, a data-plane
		// kubeconfig would have to be completed with whatever credentials
		// its user has at hand, which are meant for another server.
		if s.SessionKubeconfig.ExecCommand == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url needs --kubeconfig-exec-command: data-plane kubeconfigs get their JWT from it"))
		}
		if s.DataPlane.AuthenticationConfigFile == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url needs --data-plane-authentication-config: whose issuers name an owner decides whether its kubeconfig points at the data plane"))
		}
	}
	if s.ClientQPS <= 0 || s.ClientBurst < 1 {
		errs = append(errs, fmt.Errorf("--controller-qps and --controller-burst must be positive"))
	}
	if c.GardenerClusterKubeconfigs.Workers < 1 || c.Sessions.Workers < 1 {
		errs = append(errs, fmt.Errorf("--kubeconfig-workers and --session-workers must be at least 1"))
	}
	errs = append(errs, o.validateRecording()...)
	return utilerrors.NewAggregate(errs)
}

// sessionLimits are the session limits the flags give: the TTLs, the access
// groups and the lifecycle flags together.
func (o *Options) sessionLimits() validation.SessionLimits {
	policy := o.SessionLifecycle
	policy.MinTTL, policy.MaxTTL = o.SessionMinTTL, o.SessionMaxTTL
	access := o.Server.SessionAccess
	if access == nil { // not completed yet
		access = sessionaccess.FromGroups(o.SessionAccessGroups)
	}
	policy.AccessGroups, policy.WholeTargetGroups, policy.ScopableGroups = access.Groups()
	policy.ApprovalGroups = sets.New(o.sessionApprovalGroups...)
	if policy.MaxLifetime == 0 {
		policy.MaxLifetime = policy.MaxTTL
	}
	return policy
}

// sessionAccess is the access configuration: the file's, or the levels
// --session-access-groups names.
func (o *Options) sessionAccess() (*sessionaccess.Configuration, error) {
	if o.SessionAccessConfigFile == "" {
		return sessionaccess.FromGroups(o.SessionAccessGroups), nil
	}
	if !slices.Equal(o.SessionAccessGroups, NewOptions().SessionAccessGroups) {
		return nil, fmt.Errorf("--session-access-groups and --session-access-config exclude each other: the file names the levels")
	}
	return sessionaccess.Load(o.SessionAccessConfigFile)
}

// certDirectory is where generated serving certificates go: certificates/
// in --data-dir unless --cert-dir says otherwise.
func (o *Options) certDirectory() string {
	if dir := o.RecommendedOptions.SecureServing.ServerCert.CertDirectory; dir != "" && dir != "apiserver.local.config/certificates" {
		return dir
	}
	return filepath.Join(o.DataDir, "certificates")
}

// Config builds the server configuration from the completed options,
// generating a self-signed serving certificate in --data-dir unless one is
// given.
func (o *Options) Config() (*apiserver.Config, error) {
	serving := o.RecommendedOptions.SecureServing
	serving.ServerCert.CertDirectory = o.certDirectory()
	// The aggregator dials an APIService's Service by its cluster DNS name.
	service := "clustergate." + o.Server.Controllers.Sessions.Namespace + ".svc"
	if err := serving.MaybeDefaultWithSelfSignedCerts("localhost", []string{service, service + ".cluster.local"},
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	config, err := apiserver.NewConfig(o.RecommendedOptions, o.Server)
	if err != nil {
		return nil, err
	}
	config.GenericConfig.ShutdownDelayDuration = o.ShutdownDelay
	return config, nil
}
