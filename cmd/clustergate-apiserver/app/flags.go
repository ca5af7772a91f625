// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
)

// Flags returns the flags in sections by concern, which --help prints as
// kube-apiserver prints its own: clustergate's first, in the order of
// docs/operations.md, then the generic server's, one section per part of
// the RecommendedOptions.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	o.addSessionFlags(&fss)
	o.addAccessFlags(&fss)
	o.addControllerFlags(&fss)
	o.addRecordingFlags(&fss)

	r := o.RecommendedOptions
	etcd := fss.FlagSet("etcd")
	r.Etcd.AddFlags(etcd)
	etcd.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of the embedded etcd's data (used when --etcd-servers is empty) and of generated serving certificates.")
	serving := fss.FlagSet("secure serving")
	r.SecureServing.AddFlags(serving)
	serving.DurationVar(&o.ShutdownDelay, "shutdown-delay-duration", o.ShutdownDelay,
		"Time the server keeps serving after SIGTERM while /readyz fails, so that endpoints and the aggregator stop sending it requests before it stops listening; then in-flight requests drain. Keep the pod's terminationGracePeriodSeconds above it plus the longest request.")
	r.Authentication.AddFlags(fss.FlagSet("authentication"))
	r.Authorization.AddFlags(fss.FlagSet("authorization"))
	r.Audit.AddFlags(fss.FlagSet("auditing"))
	features := fss.FlagSet("features")
	r.Features.AddFlags(features)
	utilfeature.DefaultMutableFeatureGate.AddFlag(features)
	r.CoreAPI.AddFlags(fss.FlagSet("core API"))
	r.Admission.AddFlags(fss.FlagSet("admission"))
	r.EgressSelector.AddFlags(fss.FlagSet("egress selector"))
	r.Traces.AddFlags(fss.FlagSet("traces"))
	return fss
}

// addSessionFlags adds the sections of what a Session may be and of how it
// lives: TTLs, access groups, approval and extension.
func (o *Options) addSessionFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("sessions")
	fs.DurationVar(&o.SessionMinTTL, "session-min-ttl", o.SessionMinTTL, "Shortest spec.ttl a Session may ask for.")
	fs.DurationVar(&o.SessionMaxTTL, "session-max-ttl", o.SessionMaxTTL, "Longest spec.ttl a Session may ask for.")
	fs.StringSliceVar(&o.SessionAccessGroups, "session-access-groups", o.SessionAccessGroups,
		"Values that spec.accessLevel.group of a Session may take, each a level whose certificates carry the group of its name on cluster targets; admin and viewer may also be scoped to namespaces, through Kubernetes' admin and view ClusterRoles. Excludes --session-access-config.")
	fs.StringVar(&o.SessionAccessConfigFile, "session-access-config", o.SessionAccessConfigFile,
		"File of kind SessionAccessConfiguration (config.clustergate.dev/v1alpha1): the access levels, each with a group for the whole target and a ClusterRole bound per namespace for scoped sessions, and the deny rules the proxy holds every session's requests to (docs/security.md).")
	fs.IntVar(&o.Server.SessionMaxPerOwner, "session-max-per-owner", o.Server.SessionMaxPerOwner,
		"Live (neither expired nor deleted) Sessions one owner may have across the server; the next create is refused. Each replica counts in the shared storage; creates of one owner racing on several replicas at once may exceed it by one per further replica. 0 is no limit.")
	session := &o.Server.Controllers.Sessions
	fs.IntVar(&session.Workers, "session-workers", session.Workers, "Sessions handled in parallel.")
	fs.DurationVar(&session.OrphanSweepInterval, "session-orphan-sweep-interval", session.OrphanSweepInterval,
		"How often the controllers' leader removes, from the targets it knows, the RoleBindings of scoped Sessions that no longer exist (also when it starts leading).")
	fs.StringVar(&o.Server.Namespace, "namespace", o.Server.Namespace,
		"The server's own namespace in the core cluster: session credentials and the kubeconfig Secrets of cluster targets live there (default: $POD_NAMESPACE or clustergate-system).")

	fs = fss.FlagSet("session lifecycle")
	lc := &o.SessionLifecycle
	fs.BoolVar(&lc.RequireReason, "session-require-reason", lc.RequireReason, "Refuse Sessions without spec.reason (an incident or ticket).")
	fs.StringSliceVar(&o.sessionApprovalGroups, "session-approval-groups", o.sessionApprovalGroups,
		"Access groups whose Sessions, and their extensions, wait for an approver holding the verb \"approve\" on sessions (never the owner); their expiry starts at approval.")
	fs.DurationVar(&lc.ApprovalTimeout, "session-approval-timeout", lc.ApprovalTimeout, "How long a Session may wait for approval before it is removed.")
	fs.DurationVar(&lc.MaxLifetime, "session-max-lifetime", lc.MaxLifetime,
		"Latest expiry an extension may give a Session, counted from the start of its access window (creation or approval); 0 is --session-max-ttl.")
	fs.DurationVar(&lc.IdleTimeout, "session-idle-timeout", lc.IdleTimeout,
		"spec.idleTimeout of Sessions that name none: a Session whose proxy no request or open stream used for that long ends (Ready=False, reason Idle, credentials removed). 0 is none, or --session-max-idle-timeout when that is set.")
	fs.DurationVar(&lc.MaxIdleTimeout, "session-max-idle-timeout", lc.MaxIdleTimeout,
		"Longest spec.idleTimeout a Session may ask for; when set, none (0s) is refused too. 0 is no bound.")
	fs.DurationVar(&o.Server.Controllers.LockRetention, "session-lock-retention", o.Server.Controllers.LockRetention,
		"How long a SessionLock stays after its spec.expiresAt (listed as Expired) before the controller deletes it; 0 keeps expired locks until someone deletes them. Locks without an expiry are never deleted by it.")
	fs.StringVar(&o.SessionEventSinksConfigFile, "session-event-sinks-config", o.SessionEventSinksConfigFile,
		"File of kind SessionEventSinks (config.clustergate.dev/v1alpha1): the HTTPS sinks the controllers' leader delivers every step of a Session's life to as CloudEvents or chat messages, through an outbox in the server's storage (docs/usage.md, \"Session events\"). Unset, no event is stored or sent.")
	fs.DurationVar(&lc.LastUsedInterval, "session-last-used-interval", lc.LastUsedInterval,
		"How often, at most, the replicas write a Session's status.lastUsedAt between them while it is used. The shortest idle timeout is four of it. Meant to stay at its default; shorter only for tests.")
}

// addAccessFlags adds the sections of the ways into a session: the
// aggregated proxy, the kubeconfigs handed out for it, the data plane and
// the Istio policies in front of the data plane.
func (o *Options) addAccessFlags(fss *cliflag.NamedFlagSets) {
	s := &o.Server
	fs := fss.FlagSet("proxy")
	fs.IntVar(&s.ProxyLimits.PerSession, "proxy-max-requests-per-session", s.ProxyLimits.PerSession,
		"Concurrent proxied requests (watches and streams included) per session on one replica; 0 is no limit.")
	fs.IntVar(&s.ProxyLimits.PerOwner, "proxy-max-requests-per-owner", s.ProxyLimits.PerOwner,
		"Concurrent proxied requests per session owner on one replica; 0 is no limit.")
	fs.DurationVar(&s.ModeratorWait, "session-moderator-wait", s.ModeratorWait,
		"How long an exec or attach of a session whose access level requires a moderator (moderated: true in --session-access-config) waits for a moderator to follow it before it is refused.")

	fs = fss.FlagSet("session kubeconfigs")
	fs.StringVar(&s.SessionKubeconfig.ExternalURL, "external-url", s.SessionKubeconfig.ExternalURL,
		"URL users reach the control plane with; session kubeconfigs point at it plus the proxy path.")
	fs.StringVar(&s.ExternalCAFile, "external-ca-file", s.ExternalCAFile, "CA bundle that verifies --external-url, put into session kubeconfigs.")
	fs.StringVar(&s.SessionKubeconfig.ExecCommand, "kubeconfig-exec-command", s.SessionKubeconfig.ExecCommand,
		"Exec credential plugin (for example kubelogin) of the user in session kubeconfigs; empty leaves the user to the caller.")
	fs.StringArrayVar(&s.SessionKubeconfig.ExecArgs, "kubeconfig-exec-arg", s.SessionKubeconfig.ExecArgs, "Argument of --kubeconfig-exec-command; repeat for more.")

	fs = fss.FlagSet("data plane")
	fs.StringVar(&s.DataPlane.Address, "data-plane-address", s.DataPlane.Address,
		"host:port of the data plane's listener, which serves /sessions/<namespace>/<name>/<path on the target> to callers with a bearer JWT of the session's owner; empty turns it off.")
	fs.StringVar(&s.DataPlane.AuthenticationConfigFile, "data-plane-authentication-config", s.DataPlane.AuthenticationConfigFile,
		"AuthenticationConfiguration (apiserver.config.k8s.io/v1, kube-apiserver's --authentication-config format) of the JWT issuers the data plane accepts; required with --data-plane-address.")
	fs.BoolVar(&s.DataPlane.SharedGardenIdentities, "data-plane-shared-garden-identities", s.DataPlane.SharedGardenIdentities,
		"The data plane's JWT issuers are the garden's own, so their user names are garden user names: they then need no prefix of their own. Without it, every issuer must map user names and groups with a non-empty prefix, outside system:.")
	fs.StringVar(&s.DataPlane.TLSCertFile, "data-plane-tls-cert-file", s.DataPlane.TLSCertFile,
		"Certificate of the data plane's listener; empty presents the serving certificate.")
	fs.StringVar(&s.DataPlane.TLSKeyFile, "data-plane-tls-private-key-file", s.DataPlane.TLSKeyFile, "Key of --data-plane-tls-cert-file.")
	fs.StringVar(&s.SessionKubeconfig.DataPlaneURL, "data-plane-external-url", s.SessionKubeconfig.DataPlaneURL,
		"URL users reach the data plane with (a gateway in front of --data-plane-address); session kubeconfigs then point at it plus the session's path instead of the aggregated proxy.")
	fs.StringVar(&s.DataPlaneCAFile, "data-plane-ca-file", s.DataPlaneCAFile, "CA bundle that verifies --data-plane-external-url, put into session kubeconfigs.")

	fs = fss.FlagSet("istio")
	policy := &s.Controllers.Sessions.IstioPolicy
	fs.StringVar(&policy.Namespace, "istio-namespace", policy.Namespace,
		"Namespace of the data plane's Istio gateway, where each session gets an AuthorizationPolicy that lets only its owner's JWT through to its paths; empty turns them off. Needs --data-plane-authentication-config, whose issuers and claims the policies match.")
	fs.StringVar(&o.istioSelector, "istio-workload-selector", o.istioSelector, "Labels that select the data plane's Istio gateway pods, as key=value,...")
	fs.IntVar(&policy.Port, "istio-gateway-port", policy.Port,
		"Port the data plane's Istio gateway serves the data plane on; the sessions' AuthorizationPolicies match no other.")
}

// addControllerFlags adds the sections of Gardener and the
// GardenerClusterKubeconfigs kept from it, and of the controllers' requests
// and leader election.
func (o *Options) addControllerFlags(fss *cliflag.NamedFlagSets) {
	c := &o.Server.Controllers
	fs := fss.FlagSet("gardener")
	fs.StringVar(&c.Gardener.Kubeconfig, "gardener-kubeconfig", c.Gardener.Kubeconfig, "Kubeconfig of the Gardener API server.")
	fs.StringVar(&c.Gardener.Project, "gardener-project", c.Gardener.Project,
		"Default Gardener project: that of Shoots that sessions and kubeconfigs name without a project outside a project's namespace garden-<p> (where it is p). Without it the kubeconfig controller is off.")
	fs.Float32Var(&c.Gardener.QPS, "gardener-qps", c.Gardener.QPS, "Requests per second to Gardener.")
	fs.IntVar(&c.Gardener.Burst, "gardener-burst", c.Gardener.Burst, "Burst of requests to Gardener.")
	fs.DurationVar(&c.Gardener.Timeout, "gardener-timeout", c.Gardener.Timeout, "Timeout of one request to Gardener.")
	fs.DurationVar(&c.Gardener.ProbeInterval, "gardener-probe-interval", c.Gardener.ProbeInterval,
		"How often every replica lists one Shoot to tell whether Gardener answers (metric clustergate_gardener_requests_total{operation=\"probe\"}); 0 turns it off.")
	fs.DurationVar(&c.GardenerClusterKubeconfigs.Expiration, "kubeconfig-expiration", c.GardenerClusterKubeconfigs.Expiration,
		"Validity asked of Gardener for each kubeconfig (at least 10m; Gardener may cap it).")
	fs.Float64Var(&c.GardenerClusterKubeconfigs.RotationRatio, "kubeconfig-rotation-ratio", c.GardenerClusterKubeconfigs.RotationRatio,
		"Fraction of a kubeconfig's validity after which it is rotated.")
	fs.IntVar(&c.GardenerClusterKubeconfigs.Workers, "kubeconfig-workers", c.GardenerClusterKubeconfigs.Workers, "GardenerClusterKubeconfigs handled in parallel.")

	fs = fss.FlagSet("controllers")
	fs.Float32Var(&o.Server.ClientQPS, "controller-qps", o.Server.ClientQPS,
		"Requests per second of the controllers to the core cluster and to the server's own API (client-go's default of 5 would throttle thousands of objects).")
	fs.IntVar(&o.Server.ClientBurst, "controller-burst", o.Server.ClientBurst, "Burst of --controller-qps.")
	fs.BoolVar(&c.LeaderElect, "leader-elect", c.LeaderElect, "Run the controllers that write on one replica, elected with a Lease in the core cluster.")
	fs.StringVar(&c.LeaseNamespace, "leader-election-namespace", c.LeaseNamespace, "Namespace of the controllers' Lease (default: --namespace).")
}
