// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	certutil "k8s.io/client-go/util/cert"
)

// issuer is an OIDC issuer on a local TLS server: a discovery document and
// the public key of its signing key.
type issuer struct {
	server *httptest.Server
	key    *rsa.PrivateKey
}

func newIssuer(t testing.TB) *issuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	i := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": i.server.URL, "jwks_uri": i.server.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	i.server = httptest.NewTLSServer(mux)
	t.Cleanup(i.server.Close)
	return i
}

func (i *issuer) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.server.Certificate().Raw}))
}

// token signs claims with key as issuer iss.
func token(t testing.TB, key *rsa.PrivateKey, claims jwt.Claims) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(signer).Claims(claims).CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeConfig(t testing.TB, content string) string {
	file := filepath.Join(t.TempDir(), "authn.yaml")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func jwtConfig(url, ca, extra string) string {
	indented := "      " + strings.ReplaceAll(strings.TrimSpace(ca), "\n", "\n      ")
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [clustergate-data-plane]
    certificateAuthority: |
%s
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
%s`, url, indented, extra)
}

// TestLoadAuthenticator: tokens of the configured issuer for the configured
// audience authenticate as the mapped user; anything else does not.
func TestLoadAuthenticator(t *testing.T) {
	i := newIssuer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	auth, err := LoadAuthenticator(ctx, writeConfig(t, jwtConfig(i.server.URL, i.caPEM(), "")), false)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for auth.HealthCheck() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := auth.HealthCheck(); err != nil {
		t.Fatalf("issuer keys not loaded: %v", err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	valid := jwt.Claims{Issuer: i.server.URL, Subject: "alice", Audience: jwt.Audience{"clustergate-data-plane"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	with := func(mutate func(*jwt.Claims)) jwt.Claims {
		c := valid
		mutate(&c)
		return c
	}
	tests := []struct {
		name  string
		token string
		user  string
	}{
		{name: "valid", token: token(t, i.key, valid), user: "oidc:alice"},
		{name: "no token"},
		{name: "wrong audience", token: token(t, i.key, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"kubernetes"} }))},
		{name: "expired", token: token(t, i.key, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Minute)) }))},
		{name: "bad signature", token: token(t, other, valid)},
		{name: "another issuer", token: token(t, i.key, with(func(c *jwt.Claims) { c.Issuer = "https://elsewhere.example" }))},
		{name: "not a JWT", token: "opaque-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/sessions/sre/s/api", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, ok, err := auth.AuthenticateRequest(req)
			switch {
			case tt.user == "" && ok:
				t.Errorf("authenticated as %s, want refused", resp.User.GetName())
			case tt.user != "" && (!ok || err != nil):
				t.Errorf("refused: %v", err)
			case tt.user != "" && resp.User.GetName() != tt.user:
				t.Errorf("user = %s, want %s", resp.User.GetName(), tt.user)
			}
		})
	}
}

// TestReadAuthenticationConfig: a configuration the data plane cannot use
// is refused with a reason before the server starts.
func TestReadAuthenticationConfig(t *testing.T) {
	caPEM, _, err := certutil.GenerateSelfSignedCertKey("issuer.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ca := string(caPEM)
	unprefixed := strings.Replace(jwtConfig("https://issuer.example", ca, ""), `prefix: "oidc:"`, `prefix: ""`, 1)
	tests := []struct {
		name, content, want string
		shared              bool
	}{
		{name: "anonymous access", content: jwtConfig("https://issuer.example", ca, "anonymous: {enabled: true}\n"), want: "anonymous access cannot be enabled"},
		{name: "no issuer", content: "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n", want: "no jwt issuer"},
		{name: "an issuer over http", content: jwtConfig("http://issuer.example", ca, ""), want: "https"},
		{name: "another kind", content: "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n", want: "AuthenticationConfiguration is expected"},
		// Data-plane names in a space of their own.
		{name: "a prefixed claim", content: jwtConfig("https://issuer.example", ca, "")},
		{name: "no user name prefix", content: unprefixed, want: "claimMappings.username.prefix must not be empty"},
		{name: "no user name prefix, the garden's own issuer", content: unprefixed, shared: true},
		{name: "a system: prefix", content: strings.Replace(jwtConfig("https://issuer.example", ca, ""), `prefix: "oidc:"`, `prefix: "system:oidc:"`, 1),
			want: "system: space"},
		{name: "a user name expression", content: strings.Replace(jwtConfig("https://issuer.example", ca, ""), `username: {claim: sub, prefix: "oidc:"}`,
			`username: {expression: "'oidc:' + claims.sub"}`, 1), want: "not an expression"},
		{name: "groups without a prefix", content: jwtConfig("https://issuer.example", ca, `    groups: {claim: groups, prefix: ""}`+"\n"),
			want: "claimMappings.groups.prefix must not be empty"},
		{name: "two issuers, one prefix", content: jwtConfig("https://issuer.example", ca, "") + strings.TrimPrefix(jwtConfig("https://other.example", ca, ""),
			"apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n"), want: "no other's starts with"},
		{name: "prefixed groups", content: jwtConfig("https://issuer.example", ca, `    groups: {claim: groups, prefix: "oidc:"}`+"\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadAuthenticationConfig(writeConfig(t, tt.content), tt.shared)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
