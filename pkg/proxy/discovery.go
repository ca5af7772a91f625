// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

const (
	// discoveryTTL is how long a target's discovery of a group version is
	// trusted. A resource's scope never changes while it exists (a
	// CustomResourceDefinition's scope is immutable); the TTL bounds how
	// long one deleted and defined anew with another scope is misjudged.
	discoveryTTL = 5 * time.Minute
	// discoveryRefresh is how old a group version's discovery must be
	// before a resource it does not list fetches it again: a resource
	// defined since is seen within it, and requests for resources that do
	// not exist cannot make the proxy fetch discovery at their own pace.
	discoveryRefresh = 10 * time.Second
	// discoveryTimeout bounds one fetch; the requests waiting for it are
	// refused with a 503 when it fails.
	discoveryTimeout = 10 * time.Second
	// discoveryMaxEntries bounds the cache: one entry per target and group
	// version, the least recently used going first.
	discoveryMaxEntries = 4096
	// discoveryMaxBytes bounds the discovery document read; a group
	// version's is some kilobytes.
	discoveryMaxBytes = 16 << 20
)

// discoveryUserAgent tells the proxy's own discovery requests in the
// target's audit log from the session owner's.
const discoveryUserAgent = "clustergate (discovery for session scopes and deny rules)"

// discovery tells whether the resources of targets are namespaced, from the
// targets' own discovery of each group version, fetched with the session's
// credentials on first need and cached per target.
type discovery struct {
	clock clock.PassiveClock
	cache *utilcache.LRUExpireCache
	// fetches lets the requests that need one group version of one target
	// wait for a single fetch of it.
	fetches singleflight.Group
}

// groupVersionScopes is a target's discovery of one group version.
type groupVersionScopes struct {
	// namespaced holds every resource the group version lists, subresources
	// left out; nil when the target does not serve the group version.
	namespaced map[string]bool
	fetched    time.Time
}

func newDiscovery(clk clock.PassiveClock) *discovery {
	return &discovery{clock: clk, cache: utilcache.NewLRUExpireCacheWithClock(discoveryMaxEntries, clk)}
}

// namespaced tells whether resource of group and version is namespaced on
// t's target, and whether the target lists it at all.
func (d *discovery) namespaced(ctx context.Context, t Target, group, version, resource string) (namespaced, listed bool, err error) {
	path := "/apis/" + group + "/" + version
	if group == "" {
		path = "/api/" + version
	}
	key := t.Backend.String() + " " + path
	if cached, ok := d.cache.Get(key); ok {
		scopes := cached.(*groupVersionScopes)
		if namespaced, listed := scopes.namespaced[resource]; listed || d.clock.Since(scopes.fetched) < discoveryRefresh {
			return namespaced, listed, nil
		}
	}
	fetched, err, _ := d.fetches.Do(key, func() (any, error) {
		// Not the request's context: others wait for the same fetch, and
		// one client going away must not fail theirs.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discoveryTimeout)
		defer cancel()
		scopes, err := fetchScopes(ctx, t, path)
		if err != nil {
			return nil, err
		}
		scopes.fetched = d.clock.Now()
		d.cache.Add(key, scopes, discoveryTTL)
		return scopes, nil
	})
	if err != nil {
		return false, false, err
	}
	namespaced, listed = fetched.(*groupVersionScopes).namespaced[resource]
	return namespaced, listed, nil
}

// fetchScopes reads the discovery document at path of t's target with the
// session's own transport, as kubectl reads it. A group version the target
// does not serve lists nothing; any other failure is an error, never a
// guess.
func fetchScopes(ctx context.Context, t Target, path string) (*groupVersionScopes, error) {
	u := *t.Backend
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", discoveryUserAgent)
	client := &http.Client{Transport: t.Transport,
		// A redirect would take the session's credentials elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return &groupVersionScopes{}, nil
	default:
		return nil, fmt.Errorf("GET %s: the target answered %s", path, resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.NewDecoder(io.LimitReader(resp.Body, discoveryMaxBytes)).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	scopes := &groupVersionScopes{namespaced: make(map[string]bool, len(list.APIResources))}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			scopes.namespaced[r.Name] = r.Namespaced
		}
	}
	return scopes, nil
}
