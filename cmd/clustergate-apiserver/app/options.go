// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package app holds the clustergate-apiserver command: its flags, their
// checks, and the run of the server they configure.
package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/clustergate/clustergate/pkg/admission/quotaconfig"
	"github.com/clustergate/clustergate/pkg/admission/sessionowner"
	"github.com/clustergate/clustergate/pkg/admission/targetaccess"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/apiserver"
	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/controllers/kubeconfig"
	"github.com/clustergate/clustergate/pkg/controllers/session"
	"github.com/clustergate/clustergate/pkg/dataplane"
	"github.com/clustergate/clustergate/pkg/embeddedetcd"
	"github.com/clustergate/clustergate/pkg/gardener"
	generatedopenapi "github.com/clustergate/clustergate/pkg/generated/openapi"
	"github.com/clustergate/clustergate/pkg/intern"
	"github.com/clustergate/clustergate/pkg/proxy"
	sessionstorage "github.com/clustergate/clustergate/pkg/registry/session/storage"
)

// etcdPathPrefix is where the server keeps its objects in etcd.
const etcdPathPrefix = "/registry/clustergate.dev"

// Options are the flags of clustergate-apiserver.
type Options struct {
	// RecommendedOptions are the generic server's flags: etcd, serving,
	// delegated authentication and authorization, admission, audit, features.
	RecommendedOptions *genericoptions.RecommendedOptions

	// DataDir holds the embedded etcd's data and generated serving certificates.
	DataDir string
	// SessionMinTTL is the shortest TTL a Session may ask for.
	SessionMinTTL time.Duration
	// SessionMaxTTL is the longest TTL a Session may ask for.
	SessionMaxTTL time.Duration
	// SessionAccessGroups are the access groups a Session may ask for.
	SessionAccessGroups []string
	// SessionMaxPerOwner caps the live sessions of one owner across the
	// server; 0 is no cap.
	SessionMaxPerOwner int
	// SessionLifecycle holds the --session-* flags of approval, extension
	// and justification; sessionPolicy merges them with the TTLs.
	SessionLifecycle validation.SessionPolicy

	// Gardener reaches the Gardener project whose Shoots kubeconfigs are for.
	Gardener gardener.Config
	// Kubeconfig configures the GardenerClusterKubeconfig controller.
	Kubeconfig kubeconfig.Options
	// Session configures the Session controller.
	Session session.Options
	// sessionApprovalGroups is the flag form of SessionLifecycle.ApprovalGroups.
	sessionApprovalGroups []string
	// istioSelector is the flag form of Session.Policy.Selector.
	istioSelector string
	// ClientQPS and ClientBurst bound the controllers' requests to the core
	// cluster and to the server's own API.
	ClientQPS   float32
	ClientBurst int
	// ProxyLimits cap concurrent proxied requests.
	ProxyLimits proxy.Limits
	// ExternalURL, ExternalCAFile and the exec plugin shape session kubeconfigs.
	ExternalURL, ExternalCAFile string
	ExecCommand                 string
	ExecArgs                    []string
	// DataPlane configures the data plane's listener; DataPlaneURL and
	// DataPlaneCAFile point session kubeconfigs at it.
	DataPlane                     dataplane.Config
	DataPlaneURL, DataPlaneCAFile string

	// LeaderElect runs the writing controllers on one elected replica.
	LeaderElect bool
	// LeaderElectionNamespace holds the controllers' Lease in the core cluster.
	LeaderElectionNamespace string

	// embeddedEtcdURL is set by Complete when the server runs its own etcd.
	embeddedEtcdURL string
	// standalone is set by Complete when there is no core cluster to
	// delegate to; only system:masters is then authorized.
	standalone bool
}

// NewOptions returns the options with their defaults.
func NewOptions() *Options {
	policy := validation.DefaultSessionPolicy()
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		DataDir:             "clustergate-data",
		SessionMinTTL:       policy.MinTTL,
		SessionMaxTTL:       policy.MaxTTL,
		SessionAccessGroups: sets.List(policy.AccessGroups),
		SessionMaxPerOwner:  5,
		SessionLifecycle:    validation.SessionPolicy{ApprovalTimeout: policy.ApprovalTimeout},
		Gardener:            gardener.Config{QPS: 20, Burst: 40, Timeout: 30 * time.Second, ProbeInterval: 30 * time.Second},
		Kubeconfig: kubeconfig.Options{
			Config:     kubeconfig.Config{RotationRatio: 0.6, ConflictRecheck: 5 * time.Minute, GardenerRetry: 5 * time.Minute},
			Expiration: 24 * time.Hour,
			Workers:    10,
		},
		Session: session.Options{
			Config:    session.Config{CSRPoll: 2 * time.Second, RetryAfter: 30 * time.Second},
			Namespace: serverNamespace(),
			Policy:    session.PolicyConfig{Port: 8444},
			Workers:   10,
		},
		istioSelector:           "istio=clustergate-data-plane",
		ProxyLimits:             proxy.Limits{PerSession: 100, PerOwner: 250},
		ClientQPS:               100,
		ClientBurst:             200,
		LeaderElect:             true,
		LeaderElectionNamespace: serverNamespace(),
	}
	// Objects are kept in etcd as protobuf, as kube-apiserver keeps its own:
	// smaller, and cheaper to decode for the watch cache. JSON written by
	// earlier versions stays readable.
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	// The kube-apiserver in front of an aggregated server already applies
	// priority and fairness to every request it forwards.
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	// The watch cache keeps a copy-on-write snapshot of its tree at every
	// write, for LISTs at an older resourceVersion, until newer events push
	// the write out of its window, which an idle server never does: after
	// 2,000 Sessions and 2,000 GardenerClusterKubeconfigs and their status
	// writes, the copies were 17 % of the heap. Such LISTs (a continue
	// token, an exact resourceVersion) are rare here and are served from
	// etcd instead. --feature-gates=ListFromCacheSnapshot=true restores them.
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(apiserverfeatures.ListFromCacheSnapshot): false}))

	// SessionOwner runs right after NamespaceLifecycle, so that webhooks and
	// admission policies see the stamped owner; TargetAccess validates
	// after it, on the owner the session is stored with. ResourceQuota
	// comes last, as in kube-apiserver, so that a request refused by any
	// other plugin uses no quota.
	admissionOptions := o.RecommendedOptions.Admission
	sessionowner.Register(admissionOptions.Plugins)
	targetaccess.Register(admissionOptions.Plugins)
	resourcequota.Register(admissionOptions.Plugins)
	order := []string{}
	for _, name := range admissionOptions.RecommendedPluginOrder {
		order = append(order, name)
		if name == lifecycle.PluginName {
			order = append(order, sessionowner.PluginName, targetaccess.PluginName)
		}
	}
	admissionOptions.RecommendedPluginOrder = append(order, resourcequota.PluginName)
	o.RecommendedOptions.ExtraAdmissionInitializers = func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		return []admission.PluginInitializer{quotaconfig.Initializer{Configuration: quotaconfig.Configuration()}}, nil
	}
	return o
}

// AddFlags adds the options' flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of the embedded etcd's data (used when --etcd-servers is empty) and of generated serving certificates.")
	fs.DurationVar(&o.SessionMinTTL, "session-min-ttl", o.SessionMinTTL, "Shortest spec.ttl a Session may ask for.")
	fs.DurationVar(&o.SessionMaxTTL, "session-max-ttl", o.SessionMaxTTL, "Longest spec.ttl a Session may ask for.")
	fs.StringSliceVar(&o.SessionAccessGroups, "session-access-groups", o.SessionAccessGroups,
		"Values that spec.accessLevel.group of a Session may take.")
	fs.IntVar(&o.SessionMaxPerOwner, "session-max-per-owner", o.SessionMaxPerOwner,
		"Live (neither expired nor deleted) Sessions one owner may have across the server; the next create is refused. Each replica counts in the shared storage; creates of one owner racing on several replicas at once may exceed it by one per further replica. 0 is no limit.")
	lc := &o.SessionLifecycle
	fs.BoolVar(&lc.RequireReason, "session-require-reason", lc.RequireReason, "Refuse Sessions without spec.reason (an incident or ticket).")
	fs.StringSliceVar(&o.sessionApprovalGroups, "session-approval-groups", o.sessionApprovalGroups,
		"Access groups whose Sessions, and their extensions, wait for an approver holding the verb \"approve\" on sessions (never the owner); their expiry starts at approval.")
	fs.DurationVar(&lc.ApprovalTimeout, "session-approval-timeout", lc.ApprovalTimeout, "How long a Session may wait for approval before it is removed.")
	fs.DurationVar(&lc.MaxLifetime, "session-max-lifetime", lc.MaxLifetime,
		"Latest expiry an extension may give a Session, counted from the start of its access window (creation or approval); 0 is --session-max-ttl.")

	fs.StringVar(&o.Gardener.Kubeconfig, "gardener-kubeconfig", o.Gardener.Kubeconfig, "Kubeconfig of the Gardener API server.")
	fs.StringVar(&o.Gardener.Project, "gardener-project", o.Gardener.Project,
		"Gardener project whose Shoots kubeconfigs and sessions are for (namespace garden-<project>). Without it the kubeconfig controller is off.")
	fs.Float32Var(&o.Gardener.QPS, "gardener-qps", o.Gardener.QPS, "Requests per second to Gardener.")
	fs.IntVar(&o.Gardener.Burst, "gardener-burst", o.Gardener.Burst, "Burst of requests to Gardener.")
	fs.DurationVar(&o.Gardener.Timeout, "gardener-timeout", o.Gardener.Timeout, "Timeout of one request to Gardener.")
	fs.DurationVar(&o.Gardener.ProbeInterval, "gardener-probe-interval", o.Gardener.ProbeInterval,
		"How often every replica lists one Shoot to tell whether Gardener answers (metric clustergate_gardener_requests_total{operation=\"probe\"}); 0 turns it off.")
	fs.DurationVar(&o.Kubeconfig.Expiration, "kubeconfig-expiration", o.Kubeconfig.Expiration,
		"Validity asked of Gardener for each kubeconfig (at least 10m; Gardener may cap it).")
	fs.Float64Var(&o.Kubeconfig.RotationRatio, "kubeconfig-rotation-ratio", o.Kubeconfig.RotationRatio,
		"Fraction of a kubeconfig's validity after which it is rotated.")
	fs.IntVar(&o.Kubeconfig.Workers, "kubeconfig-workers", o.Kubeconfig.Workers, "GardenerClusterKubeconfigs handled in parallel.")
	fs.StringVar(&o.Session.Namespace, "namespace", o.Session.Namespace,
		"The server's own namespace in the core cluster: session credentials and the kubeconfig Secrets of cluster targets live there (default: $POD_NAMESPACE or clustergate-system).")
	fs.StringVar(&o.Session.Policy.Namespace, "istio-namespace", o.Session.Policy.Namespace,
		"Namespace of the data plane's Istio gateway, where each session gets an AuthorizationPolicy that lets only its owner's JWT through to its paths; empty turns them off. Needs --data-plane-authentication-config, whose issuers and claims the policies match.")
	fs.StringVar(&o.istioSelector, "istio-workload-selector", o.istioSelector, "Labels that select the data plane's Istio gateway pods, as key=value,...")
	fs.IntVar(&o.Session.Policy.Port, "istio-gateway-port", o.Session.Policy.Port,
		"Port the data plane's Istio gateway serves the data plane on; the sessions' AuthorizationPolicies match no other.")
	fs.IntVar(&o.Session.Workers, "session-workers", o.Session.Workers, "Sessions handled in parallel.")
	fs.Float32Var(&o.ClientQPS, "controller-qps", o.ClientQPS,
		"Requests per second of the controllers to the core cluster and to the server's own API (client-go's default of 5 would throttle thousands of objects).")
	fs.IntVar(&o.ClientBurst, "controller-burst", o.ClientBurst, "Burst of --controller-qps.")
	fs.IntVar(&o.ProxyLimits.PerSession, "proxy-max-requests-per-session", o.ProxyLimits.PerSession,
		"Concurrent proxied requests (watches and streams included) per session on one replica; 0 is no limit.")
	fs.IntVar(&o.ProxyLimits.PerOwner, "proxy-max-requests-per-owner", o.ProxyLimits.PerOwner,
		"Concurrent proxied requests per session owner on one replica; 0 is no limit.")
	fs.StringVar(&o.ExternalURL, "external-url", o.ExternalURL,
		"URL users reach the control plane with; session kubeconfigs point at it plus the proxy path.")
	fs.StringVar(&o.ExternalCAFile, "external-ca-file", o.ExternalCAFile, "CA bundle that verifies --external-url, put into session kubeconfigs.")
	fs.StringVar(&o.ExecCommand, "kubeconfig-exec-command", o.ExecCommand,
		"Exec credential plugin (for example kubelogin) of the user in session kubeconfigs; empty leaves the user to the caller.")
	fs.StringArrayVar(&o.ExecArgs, "kubeconfig-exec-arg", o.ExecArgs, "Argument of --kubeconfig-exec-command; repeat for more.")
	fs.StringVar(&o.DataPlane.Address, "data-plane-address", o.DataPlane.Address,
		"host:port of the data plane's listener, which serves /sessions/<namespace>/<name>/<path on the target> to callers with a bearer JWT of the session's owner; empty turns it off.")
	fs.StringVar(&o.DataPlane.AuthenticationConfigFile, "data-plane-authentication-config", o.DataPlane.AuthenticationConfigFile,
		"AuthenticationConfiguration (apiserver.config.k8s.io/v1, kube-apiserver's --authentication-config format) of the JWT issuers the data plane accepts; required with --data-plane-address.")
	fs.BoolVar(&o.DataPlane.SharedGardenIdentities, "data-plane-shared-garden-identities", o.DataPlane.SharedGardenIdentities,
		"The data plane's JWT issuers are the garden's own, so their user names are garden user names: they then need no prefix of their own. Without it, every issuer must map user names and groups with a non-empty prefix, outside system:.")
	fs.StringVar(&o.DataPlane.TLSCertFile, "data-plane-tls-cert-file", o.DataPlane.TLSCertFile,
		"Certificate of the data plane's listener; empty presents the serving certificate.")
	fs.StringVar(&o.DataPlane.TLSKeyFile, "data-plane-tls-private-key-file", o.DataPlane.TLSKeyFile, "Key of --data-plane-tls-cert-file.")
	fs.StringVar(&o.DataPlaneURL, "data-plane-external-url", o.DataPlaneURL,
		"URL users reach the data plane with (a gateway in front of --data-plane-address); session kubeconfigs then point at it plus the session's path instead of the aggregated proxy.")
	fs.StringVar(&o.DataPlaneCAFile, "data-plane-ca-file", o.DataPlaneCAFile, "CA bundle that verifies --data-plane-external-url, put into session kubeconfigs.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run the controllers that write on one replica, elected with a Lease in the core cluster.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the controllers' Lease.")
}

// serverNamespace is the namespace the server runs in.
func serverNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "clustergate-system"
}

// Complete fills in what the flags leave open: an embedded etcd when no
// --etcd-servers are given, and standalone mode when there is no core cluster.
func (o *Options) Complete() error {
	o.Session.ApprovalTimeout = o.SessionLifecycle.ApprovalTimeout
	selector, err := labels.ConvertSelectorToLabelsMap(o.istioSelector)
	if err == nil {
		o.Session.Policy.Selector = selector
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
		o.standalone = true
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
	if err := o.sessionPolicy().Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.embeddedEtcdURL != "" && o.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir is required when --etcd-servers is empty"))
	}
	if o.Gardener.Project != "" && o.Gardener.Kubeconfig == "" {
		errs = append(errs, fmt.Errorf("--gardener-kubeconfig is required with --gardener-project"))
	}
	if r := o.Kubeconfig.RotationRatio; r <= 0 || r >= 1 {
		errs = append(errs, fmt.Errorf("--kubeconfig-rotation-ratio must lie between 0 and 1, got %v", r))
	}
	if o.Kubeconfig.Expiration < gardener.MinExpiration {
		errs = append(errs, fmt.Errorf("--kubeconfig-expiration must be at least %s", gardener.MinExpiration))
	}
	if o.Session.Policy.Namespace != "" {
		if o.DataPlane.AuthenticationConfigFile == "" {
			errs = append(errs, fmt.Errorf("--istio-namespace needs --data-plane-authentication-config: the policies match its issuers and claims"))
		}
		if p := o.Session.Policy.Port; p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--istio-gateway-port must be a port, got %d", p))
		} else if p == o.RecommendedOptions.SecureServing.BindPort || strings.HasSuffix(o.DataPlane.Address, ":"+strconv.Itoa(p)) {
			// Where Istio drops a DENY rule's HTTP conditions the port
			// remains: on a port of the server's own, a policy that
			// selected the server by mistake would cut it off.
			errs = append(errs, fmt.Errorf("--istio-gateway-port %d is a port the server listens on; the gateway's data-plane port must be another", p))
		}
	}
	if _, err := labels.ConvertSelectorToLabelsMap(o.istioSelector); err != nil || o.istioSelector == "" {
		errs = append(errs, fmt.Errorf("--istio-workload-selector must be key=value pairs: %q", o.istioSelector))
	}
	if o.SessionMaxPerOwner < 0 {
		errs = append(errs, fmt.Errorf("--session-max-per-owner may not be negative"))
	}
	if o.ProxyLimits.PerSession < 0 || o.ProxyLimits.PerOwner < 0 {
		errs = append(errs, fmt.Errorf("proxy limits may not be negative"))
	}
	if o.ExternalURL != "" {
		if u, err := url.Parse(o.ExternalURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--external-url must be an https URL, got %q", o.ExternalURL))
		}
	}
	if o.DataPlane.Address != "" || o.DataPlane.AuthenticationConfigFile != "" {
		if _, _, err := dataplane.ReadAuthenticationConfig(o.DataPlane.AuthenticationConfigFile, o.DataPlane.SharedGardenIdentities); err != nil {
			errs = append(errs, fmt.Errorf("--data-plane-authentication-config: %w", err))
		}
	}
	if (o.DataPlane.TLSCertFile == "") != (o.DataPlane.TLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("--data-plane-tls-cert-file and --data-plane-tls-private-key-file go together"))
	}
	if o.DataPlaneURL != "" {
		if u, err := url.Parse(o.DataPlaneURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url must be an https URL, got %q", o.DataPlaneURL))
		}
		// Without a plugin that fetches the owner's JWT, a data-plane
		// kubeconfig would have to be completed with whatever credentials
		// its user has at hand, which are meant for another server.
		if o.ExecCommand == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url needs --kubeconfig-exec-command: data-plane kubeconfigs get their JWT from it"))
		}
		if o.DataPlane.AuthenticationConfigFile == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url needs --data-plane-authentication-config: whose issuers name an owner decides whether its kubeconfig points at the data plane"))
		}
	}
	if o.ClientQPS <= 0 || o.ClientBurst < 1 {
		errs = append(errs, fmt.Errorf("--controller-qps and --controller-burst must be positive"))
	}
	if o.Kubeconfig.Workers < 1 || o.Session.Workers < 1 {
		errs = append(errs, fmt.Errorf("--kubeconfig-workers and --session-workers must be at least 1"))
	}
	return utilerrors.NewAggregate(errs)
}

func (o *Options) sessionPolicy() validation.SessionPolicy {
	policy := o.SessionLifecycle
	policy.MinTTL, policy.MaxTTL = o.SessionMinTTL, o.SessionMaxTTL
	policy.AccessGroups, policy.ApprovalGroups = sets.New(o.SessionAccessGroups...), sets.New(o.sessionApprovalGroups...)
	if policy.MaxLifetime == 0 {
		policy.MaxLifetime = policy.MaxTTL
	}
	return policy
}

// Config builds the server configuration from the options.
func (o *Options) Config() (*apiserver.Config, error) {
	serving := o.RecommendedOptions.SecureServing
	if serving.ServerCert.CertDirectory == "" || serving.ServerCert.CertDirectory == "apiserver.local.config/certificates" {
		serving.ServerCert.CertDirectory = filepath.Join(o.DataDir, "certificates")
	}
	// The aggregator dials an APIService's Service by its cluster DNS name.
	service := "clustergate." + o.Session.Namespace + ".svc"
	if err := serving.MaybeDefaultWithSelfSignedCerts("localhost", []string{service, service + ".cluster.local"},
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}

	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	serverConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	serverConfig.OpenAPIConfig.Info.Title = "clustergate"
	serverConfig.OpenAPIConfig.Info.Version = v1alpha1.SchemeGroupVersion.Version
	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	serverConfig.OpenAPIV3Config.Info.Title = "clustergate"
	serverConfig.OpenAPIV3Config.Info.Version = v1alpha1.SchemeGroupVersion.Version
	apiserver.SlimOpenAPIV3(serverConfig.OpenAPIV3Config)
	serverConfig.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	serverConfig.FeatureGate = utilfeature.DefaultFeatureGate

	// The generic options keep objects in the codec given to
	// NewRecommendedOptions, JSON; --storage-media-type is honoured only by
	// kube-apiserver's own storage factory. Objects were stored as JSON
	// until this codec was set here (found in the heap profile at 10,000
	// objects: the watch cache's consistency check decoded JSON).
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  o.RecommendedOptions.Etcd.DefaultStorageMediaType,
		StorageSerializer: apiserver.Codecs,
		StorageVersion:    v1alpha1.SchemeGroupVersion,
		MemoryVersion:     schema.GroupVersion{Group: v1alpha1.GroupName, Version: runtime.APIVersionInternal},
		Config:            o.RecommendedOptions.Etcd.StorageConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("--storage-media-type: %w", err)
	}
	// Every object the watch cache holds is decoded by this codec: interned,
	// the strings that repeat across objects are kept once.
	o.RecommendedOptions.Etcd.StorageConfig.Codec, o.RecommendedOptions.Etcd.StorageConfig.EncodeVersioner = intern.Codec{Codec: codec}, versioner

	if err := o.RecommendedOptions.ApplyTo(serverConfig); err != nil {
		return nil, err
	}
	// As kube-apiserver does: compressing what the server sends itself (the
	// controllers' watches and writes) costs a flate writer per watch and
	// processor time on both ends for nothing.
	serverConfig.LoopbackClientConfig.DisableCompression = true
	// The front proxy's CA comes from a ConfigMap informer that syncs only
	// after the server listens; until then every request of the aggregator
	// would be anonymous and refused. Not ready before it is there.
	if rh := serverConfig.Authentication.RequestHeaderConfig; rh != nil {
		serverConfig.AddReadyzChecks(healthz.NamedCheck("requestheader-client-ca", func(*http.Request) error {
			if _, ok := rh.CAContentProvider.VerifyOptions(); !ok {
				return errors.New("the front proxy's client CA is not loaded yet")
			}
			return nil
		}))
	}
	serverConfig.LongRunningFunc = apiserver.LongRunning
	kubeconfig := sessionstorage.KubeconfigConfig{ExternalURL: o.ExternalURL, ExecCommand: o.ExecCommand, ExecArgs: o.ExecArgs, DataPlaneURL: o.DataPlaneURL}
	// The Istio policies and the kind of a session's kubeconfig follow how
	// the data plane's issuers name users.
	o.Session.Policy.Issuers = nil
	if o.DataPlane.AuthenticationConfigFile != "" {
		cfg, _, err := dataplane.ReadAuthenticationConfig(o.DataPlane.AuthenticationConfigFile, o.DataPlane.SharedGardenIdentities)
		if err != nil {
			return nil, fmt.Errorf("--data-plane-authentication-config: %w", err)
		}
		for _, issuer := range dataplane.Issuers(cfg) {
			o.Session.Policy.Issuers = append(o.Session.Policy.Issuers, session.PolicyIssuer(issuer))
			kubeconfig.DataPlaneUserPrefixes = append(kubeconfig.DataPlaneUserPrefixes, issuer.UsernamePrefix)
		}
	}
	for _, ca := range []struct {
		flag, file string
		data       *[]byte
	}{{"--external-ca-file", o.ExternalCAFile, &kubeconfig.CAData}, {"--data-plane-ca-file", o.DataPlaneCAFile, &kubeconfig.DataPlaneCAData}} {
		if ca.file == "" {
			continue
		}
		data, err := os.ReadFile(ca.file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ca.flag, err)
		}
		*ca.data = data
	}
	if o.standalone {
		klog.InfoS("No core cluster configured (--kubeconfig): running standalone; only system:masters is authorized and SessionOwner is the only admission plugin")
		owner := sessionowner.New()
		owner.SetAuthorizer(serverConfig.Authorization.Authorizer)
		serverConfig.AdmissionControl = owner
	}
	return &apiserver.Config{
		GenericConfig: serverConfig,
		ExtraConfig: apiserver.ExtraConfig{
			SessionPolicy:      o.sessionPolicy(),
			SessionMaxPerOwner: o.SessionMaxPerOwner,
			ProxyLimits:        o.ProxyLimits,
			Kubeconfig:         kubeconfig,
			DataPlane:          o.DataPlane,
			Controllers: controllers.Options{
				Gardener: o.Gardener, Kubeconfig: o.Kubeconfig, Session: o.Session,
				LeaderElect: o.LeaderElect, LeaseNamespace: o.LeaderElectionNamespace,
			},
			ClientQPS:   o.ClientQPS,
			ClientBurst: o.ClientBurst,
			Standalone:  o.standalone,
		},
	}, nil
}
