// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/validation"
	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/recording"
)

// DefaultExtraConfig is clustergate's configuration for a server in
// namespace, each part's settings at their own defaults: five live sessions
// per owner, 100 proxied requests per session and 250 per owner on a
// replica, controllers at 100 requests per second, and best-effort
// recording kept 90 days.
func DefaultExtraConfig(namespace string) ExtraConfig {
	return ExtraConfig{
		Namespace:          namespace,
		SessionLimits:      validation.DefaultSessionLimits(),
		SessionMaxPerOwner: 5,
		ProxyLimits:        proxy.DefaultLimits(),
		ModeratorWait:      proxy.DefaultModeratorWait,
		Controllers:        controllers.DefaultOptions(),
		ClientQPS:          100,
		ClientBurst:        200,
		Recording:          RecordingConfig{Mode: recording.ModeBestEffort, Retention: 90 * 24 * time.Hour, FlushInterval: recording.DefaultFlushInterval},
	}
}

// Validate checks the settings of every part and what one part's settings
// require of another's, naming the flags that give them. listenPort is
// the port the server serves HTTPS on.
func (c *ExtraConfig) Validate(listenPort int) []error {
	errs := c.Controllers.Validate()
	if c.SessionMaxPerOwner < 0 {
		errs = append(errs, fmt.Errorf("--session-max-per-owner may not be negative"))
	}
	if c.ProxyLimits.PerSession < 0 || c.ProxyLimits.PerOwner < 0 {
		errs = append(errs, fmt.Errorf("proxy limits may not be negative"))
	}
	if c.ModeratorWait < time.Second {
		errs = append(errs, fmt.Errorf("--session-moderator-wait must be at least 1s"))
	}
	if c.ClientQPS <= 0 || c.ClientBurst < 1 {
		errs = append(errs, fmt.Errorf("--controller-qps and --controller-burst must be positive"))
	}
	errs = append(errs, c.validateWaysIn(listenPort)...)
	return append(errs, c.Recording.validate()...)
}

// validateWaysIn checks the settings of the ways into a session: the
// kubeconfigs handed out, the data plane and the Istio policies in front of
// it, which depend on one another.
func (c *ExtraConfig) validateWaysIn(listenPort int) []error {
	var errs []error
	kc, dp := c.SessionKubeconfig, c.DataPlane
	if kc.ExternalURL != "" && !isHTTPSURL(kc.ExternalURL) {
		errs = append(errs, fmt.Errorf("--external-url must be an https URL, got %q", kc.ExternalURL))
	}
	if dp.Address != "" || dp.AuthenticationConfigFile != "" {
		if err := ValidateDataPlaneAuthentication(dp); err != nil {
			errs = append(errs, fmt.Errorf("--data-plane-authentication-config: %w", err))
		}
	}
	if (dp.TLSCertFile == "") != (dp.TLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("--data-plane-tls-cert-file and --data-plane-tls-private-key-file go together"))
	}
	if kc.DataPlaneURL != "" {
		if !isHTTPSURL(kc.DataPlaneURL) {
			errs = append(errs, fmt.Errorf("--data-plane-external-url must be an https URL, got %q", kc.DataPlaneURL))
		}
		// Without a plugin that fetches the owner's JWT, a data-plane
		// kubeconfig would have to be completed with whatever credentials
		// its user has at hand, which are meant for another server.
		if kc.ExecCommand == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url needs --kubeconfig-exec-command: data-plane kubeconfigs get their JWT from it"))
		}
		if dp.AuthenticationConfigFile == "" {
			errs = append(errs, fmt.Errorf("--data-plane-external-url needs --data-plane-authentication-config: whose issuers name an owner decides whether its kubeconfig points at the data plane"))
		}
	}
	if policy := c.Controllers.Sessions.IstioPolicy; policy.Namespace != "" {
		if dp.AuthenticationConfigFile == "" {
			errs = append(errs, fmt.Errorf("--istio-namespace needs --data-plane-authentication-config: the policies match its issuers and claims"))
		}
		// Where Istio drops a DENY rule's HTTP conditions the port remains:
		// on a port of the server's own, a policy that selected the server
		// by mistake would cut it off.
		if p := policy.Port; p > 0 && (p == listenPort || strings.HasSuffix(dp.Address, ":"+strconv.Itoa(p))) {
			errs = append(errs, fmt.Errorf("--istio-gateway-port %d is a port the server listens on; the gateway's data-plane port must be another", p))
		}
	}
	return errs
}

// isHTTPSURL says whether s is an https URL with a host.
func isHTTPSURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// validate checks the recording settings that need nothing but themselves;
// where a local store may lie is the command's to check, which knows the
// server's other directories.
func (c RecordingConfig) validate() []error {
	var errs []error
	if !slices.Contains(recording.Modes, c.Mode) {
		errs = append(errs, fmt.Errorf("--recording must be one of %v, got %q", recording.Modes, c.Mode))
	}
	if c.Retention < 0 || c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("--recording-retention may not be negative and --recording-flush-interval must be positive"))
	}
	if c.Mode == recording.ModeOff || c.S3.Endpoint == "" {
		return errs
	}
	errs = append(errs, c.S3.Validate()...)
	if len(c.ManifestKeyFiles) == 0 {
		errs = append(errs, fmt.Errorf("--recording-manifest-key-file is required with --recording-s3-endpoint: "+
			"every replica must verify the recordings the others signed, with the same keys"))
	}
	return errs
}
