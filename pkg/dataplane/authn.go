// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/utils/clock"
)

var codecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict)
}()

// signingAlgorithms are the JOSE algorithms tokens may be signed with:
// those of OIDC providers and of kube-apiserver's service-account issuer.
var signingAlgorithms = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"}

// Authenticator authenticates data-plane requests by their bearer JWT.
type Authenticator struct {
	authenticator.Request
	checks []func() error
}

// HealthCheck fails until every issuer's keys are loaded.
func (a *Authenticator) HealthCheck() error {
	var errs []error
	for _, check := range a.checks {
		if err := check(); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// LoadAuthenticator reads an AuthenticationConfiguration
// (apiserver.config.k8s.io, as kube-apiserver's --authentication-config)
// from file and builds its JWT authenticators, which fetch their issuers'
// discovery documents and keys in the background until ctx ends, behind a
// cache of verified tokens (tokenCache). Only the jwt section counts:
// anonymous access is refused on the data plane.
func LoadAuthenticator(ctx context.Context, file string, sharedGardenIdentities bool) (*Authenticator, error) {
	cfg, compiler, err := ReadAuthenticationConfig(file, sharedGardenIdentities)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{}
	var tokens []authenticator.Token
	for _, jwt := range cfg.JWT {
		var ca oidc.CAContentProvider
		if jwt.Issuer.CertificateAuthority != "" {
			if ca, err = dynamiccertificates.NewStaticCAContent("data-plane-jwt", []byte(jwt.Issuer.CertificateAuthority)); err != nil {
				return nil, fmt.Errorf("%s: issuer %s: %w", file, jwt.Issuer.URL, err)
			}
		}
		token, err := oidc.New(ctx, oidc.Options{JWTAuthenticator: jwt, CAContentProvider: ca, Compiler: compiler,
			SupportedSigningAlgs: signingAlgorithms, APIServerID: "clustergate-data-plane"})
		if err != nil {
			return nil, fmt.Errorf("%s: issuer %s: %w", file, jwt.Issuer.URL, err)
		}
		tokens = append(tokens, token)
		a.checks = append(a.checks, token.HealthCheck)
	}
	a.Request = bearertoken.New(newTokenCache(tokenunion.NewFailOnError(tokens...), clock.RealClock{}, tokenCacheTTL, tokenCacheSize))
	return a, nil
}

// ReadAuthenticationConfig reads and validates an AuthenticationConfiguration
// for the data plane, as LoadAuthenticator does, without contacting an
// issuer: for the server's flag checks. Unless sharedGardenIdentities says
// that its issuers are the garden's own, every issuer must map names into
// a space of their own (checkIdentitySpace).
func ReadAuthenticationConfig(file string, sharedGardenIdentities bool) (*apiserverapi.AuthenticationConfiguration, authenticationcel.Compiler, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	obj, err := runtime.Decode(codecs.UniversalDecoder(), data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	cfg, ok := obj.(*apiserverapi.AuthenticationConfiguration)
	if !ok {
		return nil, nil, fmt.Errorf("%s: an AuthenticationConfiguration is expected, not %T", file, obj)
	}
	if len(cfg.JWT) == 0 {
		return nil, nil, fmt.Errorf("%s: no jwt issuer configured", file)
	}
	if cfg.Anonymous != nil && cfg.Anonymous.Enabled {
		return nil, nil, fmt.Errorf("%s: anonymous access cannot be enabled on the data plane", file)
	}
	compiler := authenticationcel.NewDefaultCompiler()
	if errs := apiservervalidation.ValidateAuthenticationConfiguration(compiler, cfg, nil); len(errs) > 0 {
		return nil, nil, fmt.Errorf("%s: %w", file, errs.ToAggregate())
	}
	if err := checkDistinctPrefixes(cfg); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if !sharedGardenIdentities {
		if err := checkIdentitySpace(cfg); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	return cfg, compiler, nil
}

// checkIdentitySpace makes the data plane's identities structurally apart
// from the garden's: the owner check compares user names, so a data-plane
// token whose mapped name equals a garden user's would own that user's
// sessions. Every issuer must map the user name, and groups if it maps
// them, from a claim with a prefix of its own that is not in the system:
// space, which garden names then cannot have when the garden's
// authenticators use other prefixes (docs/security.md).
func checkIdentitySpace(cfg *apiserverapi.AuthenticationConfiguration) error {
	var errs []error
	for _, jwt := range cfg.JWT {
		m := jwt.ClaimMappings
		if err := checkPrefix("username", m.Username); err != nil {
			errs = append(errs, fmt.Errorf("issuer %s: %w", jwt.Issuer.URL, err))
		}
		if m.Groups != (apiserverapi.PrefixedClaimOrExpression{}) {
			if err := checkPrefix("groups", m.Groups); err != nil {
				errs = append(errs, fmt.Errorf("issuer %s: %w", jwt.Issuer.URL, err))
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// checkDistinctPrefixes keeps each issuer's names apart from the others':
// with one prefix for two issuers, either could mint the other's users.
// Neither may a prefix start another, so that a user name tells its issuer.
func checkDistinctPrefixes(cfg *apiserverapi.AuthenticationConfiguration) error {
	issuers := Issuers(cfg)
	for i, a := range issuers {
		for _, b := range issuers[i+1:] {
			if strings.HasPrefix(a.UsernamePrefix, b.UsernamePrefix) || strings.HasPrefix(b.UsernamePrefix, a.UsernamePrefix) {
				return fmt.Errorf("issuers %s and %s map user names with the prefixes %q and %q: each issuer needs a prefix that no other's starts with",
					a.URL, b.URL, a.UsernamePrefix, b.UsernamePrefix)
			}
		}
	}
	return nil
}

func checkPrefix(field string, m apiserverapi.PrefixedClaimOrExpression) error {
	const hint = "; a prefix that the garden's user names never start with keeps data-plane identities apart from them " +
		"(--data-plane-shared-garden-identities says the issuer is the garden's own instead)"
	switch {
	case m.Expression != "":
		return fmt.Errorf("claimMappings.%s must be a claim with a prefix, not an expression, so that the prefix can be checked%s", field, hint)
	case m.Prefix == nil || *m.Prefix == "":
		return fmt.Errorf("claimMappings.%s.prefix must not be empty%s", field, hint)
	case systemName(*m.Prefix):
		return fmt.Errorf("claimMappings.%s.prefix %q is in the system: space, which Kubernetes reserves", field, *m.Prefix)
	}
	return nil
}

// Issuer is how one JWT issuer of the data plane names users: the user name
// of a token is UsernamePrefix followed by the value of its UsernameClaim.
// Istio policies in front of the data plane match the same claim.
type Issuer struct {
	URL, UsernameClaim, UsernamePrefix string
}

// Issuers lists how the configuration's issuers name users; issuers that map
// the user name by expression are left out: no Istio rule can mirror them.
func Issuers(cfg *apiserverapi.AuthenticationConfiguration) []Issuer {
	var issuers []Issuer
	for _, jwt := range cfg.JWT {
		m := jwt.ClaimMappings.Username
		if m.Claim == "" {
			continue
		}
		prefix := ""
		if m.Prefix != nil {
			prefix = *m.Prefix
		}
		issuers = append(issuers, Issuer{URL: jwt.Issuer.URL, UsernameClaim: m.Claim, UsernamePrefix: prefix})
	}
	return issuers
}
