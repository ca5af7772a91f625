// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// tokenCacheTTL is how long a verified token is taken on trust without
// verifying it again: kube-apiserver's default --token-success-cache-ttl.
// A token that stops verifying (its issuer dropped the signing key) keeps
// working this long at most, and never past its own exp.
const tokenCacheTTL = 10 * time.Second

// tokenCacheSize bounds the tokens remembered at once; beyond it the least
// recently used is verified again on its next request.
const tokenCacheSize = 10000

// tokenCache remembers the tokens its authenticator verified, so that a
// client's every request does not pay a signature check: a kubectl
// command is a burst of requests with one token. Entries are keyed by the
// token's SHA-256, never the token itself, and last until the token's exp
// or tokenCacheTTL, whichever comes first. Failures are not remembered:
// a token refused is asked about again at its next request.
type tokenCache struct {
	token   authenticator.Token
	clock   clock.PassiveClock
	ttl     time.Duration
	entries *lru.Cache
}

// verifiedToken is the answer for a token, valid until until.
type verifiedToken struct {
	resp  *authenticator.Response
	until time.Time
}

func newTokenCache(token authenticator.Token, clk clock.PassiveClock, ttl time.Duration, size int) *tokenCache {
	return &tokenCache{token: token, clock: clk, ttl: ttl, entries: lru.New(size)}
}

// AuthenticateToken answers from the cache while the token's entry is
// valid, and asks the authenticator otherwise.
func (c *tokenCache) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := c.entries.Get(key); ok {
		if e := v.(verifiedToken); c.clock.Now().Before(e.until) {
			return e.resp, true, nil
		}
		c.entries.Remove(key)
	}
	now := c.clock.Now()
	resp, ok, err := c.token.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return resp, ok, err
	}
	// A token without a readable exp is verified at every request.
	if exp, found := expiry(token); found {
		until := now.Add(c.ttl)
		if exp.Before(until) {
			until = exp
		}
		c.entries.Add(key, verifiedToken{resp: resp, until: until})
	}
	return resp, true, nil
}

// expiry reads the exp claim of a JWT that was just verified, so that its
// payload can be trusted.
func expiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	// Rounded down: an entry never outlives the token.
	return time.Unix(int64(*claims.Exp), 0), true
}
