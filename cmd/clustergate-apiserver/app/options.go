// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package app holds the clustergate-apiserver command: its flags, their
// checks, and the run of the server they configure.
package app

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	netutils "k8s.io/utils/net"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
	"github.com/clustergate/clustergate/pkg/sessionaccess"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
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
	// SessionEventSinksConfigFile holds where session events go.
	SessionEventSinksConfigFile string
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
		Server:              apiserver.DefaultExtraConfig(serverNamespace()),
		DataDir:             "clustergate-data",
		SessionMinTTL:       policy.MinTTL,
		SessionMaxTTL:       policy.MaxTTL,
		SessionAccessGroups: sets.List(policy.AccessGroups),
		SessionLifecycle:    validation.SessionLimits{ApprovalTimeout: policy.ApprovalTimeout, LastUsedInterval: policy.LastUsedInterval},
		istioSelector:       "istio=clustergate-data-plane",
	}
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
	if o.SessionEventSinksConfigFile != "" {
		if o.Server.Controllers.SessionEventSinks, err = sinks.Open(o.SessionEventSinksConfigFile); err != nil {
			return err
		}
	}
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
	if _, err := labels.ConvertSelectorToLabelsMap(o.istioSelector); err != nil || o.istioSelector == "" {
		errs = append(errs, fmt.Errorf("--istio-workload-selector must be key=value pairs: %q", o.istioSelector))
	}
	errs = append(errs, o.Server.Validate(o.RecommendedOptions.SecureServing.BindPort)...)
	errs = append(errs, o.validateRecordingDir()...)
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
	service := "clustergate." + o.Server.Namespace + ".svc"
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
