package dataplane

import (
	"context"
	"fmt"
	"os"

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
// discovery documents and keys in the background until ctx ends. Only the
// jwt section counts: anonymous access is refused on the data plane.
func LoadAuthenticator(ctx context.Context, file string) (*Authenticator, error) {
	cfg, compiler, err := ReadAuthenticationConfig(file)
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
	a.Request = bearertoken.New(tokenunion.NewFailOnError(tokens...))
	return a, nil
}

// ReadAuthenticationConfig reads and validates an AuthenticationConfiguration
// for the data plane, as LoadAuthenticator does, without contacting an
// issuer: for the server's flag checks.
func ReadAuthenticationConfig(file string) (*apiserverapi.AuthenticationConfiguration, authenticationcel.Compiler, error) {
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
	return cfg, compiler, nil
}
