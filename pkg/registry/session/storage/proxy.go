// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/credentials"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/ownership"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/registry/session"
)

// retryAfterSeconds is what a client is told to wait for a session that is
// not ready yet.
const retryAfterSeconds = 5

// Backends finds how to reach a session's target; *credentials.Source is
// the real one.
type Backends interface {
	Backend(uid types.UID) (credentials.Backend, error)
}

// ProxyREST serves sessions/proxy: the owner's requests, streamed to the
// session's target with the credentials the server minted.
type ProxyREST struct {
	store *genericregistry.Store
	// sessions and synced are the tracker's informer of sessions; nil
	// reads every session from the store.
	sessions listers.SessionLister
	synced   func() bool
	backends Backends
	tracker  *proxy.Tracker
	clock    clock.PassiveClock
}

// newProxyREST returns the proxy of the sessions of store, as cfg says.
func newProxyREST(store *genericregistry.Store, cfg ProxyConfig) *ProxyREST {
	r := &ProxyREST{store: store, backends: cfg.Backends, tracker: cfg.Tracker, clock: clock.RealClock{}}
	if cfg.Sessions != nil {
		r.sessions, r.synced = cfg.Sessions.Lister(), cfg.Sessions.Informer().HasSynced
	}
	return r
}

var (
	_ rest.Connecter = &ProxyREST{}
	_ rest.Storage   = &ProxyREST{}
)

// proxyMethods are the HTTP methods kubectl uses.
var proxyMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// New returns the options of a proxy request.
func (r *ProxyREST) New() runtime.Object { return &clustergate.SessionProxyOptions{} }

// Destroy does nothing: the main resource owns the storage.
func (r *ProxyREST) Destroy() {}

// ConnectMethods returns the methods the proxy passes on.
func (r *ProxyREST) ConnectMethods() []string { return proxyMethods }

// NewConnectOptions says that the path below the subresource is the path
// on the target.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &clustergate.SessionProxyOptions{}, true, "path"
}

// Connect checks that the caller owns a ready, unexpired session and returns
// the handler that streams the request to its target.
func (r *ProxyREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	options, ok := opts.(*clustergate.SessionProxyOptions)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid options %T", opts))
	}
	return r.Open(ctx, name, options.Path, proxy.WayAggregated, responder)
}

// Open checks that the user in ctx owns the ready, unexpired session name of
// ctx's namespace and returns the handler that streams a request to path on
// its target. Both ways in, sessions/proxy and the data plane, go through
// it, so they cannot disagree on who may use a session.
func (r *ProxyREST) Open(ctx context.Context, name, path string, way proxy.Way, responder rest.Responder) (http.Handler, error) {
	// The path is appended to the target's URL, which may have a path of
	// its own (a cluster behind a gateway): it may not climb out of it.
	for _, segment := range strings.Split(path, "/") {
		if segment == "." || segment == ".." {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the path through the proxy may not have a %q segment", segment))
		}
	}
	s, err := r.session(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := r.check(ctx, s); err != nil {
		return nil, err
	}
	// A lock this replica knows of refuses at once, before the leader
	// marks the session Locked; it holds the request also by its
	// requester's current groups, which the session's snapshot of the
	// owner's groups may lack.
	subject := v1alpha1.InternalLockSubjectOf(s)
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		subject.Requester = &v1alpha1.LockPerson{User: u.GetName(), Groups: u.GetGroups()}
	}
	if msg, locked := r.tracker.Holding(subject); locked {
		return nil, lockedProxy(s, msg)
	}
	if r.backends == nil {
		return nil, notReady(s, "the server runs without a core cluster and keeps no credentials")
	}
	backend, err := r.backends.Backend(s.UID)
	if errors.Is(err, credentials.ErrNotMinted) {
		return nil, notReady(s, err.Error())
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("the session's credentials: %w", err))
	}
	session.AuditReason(ctx, s)
	target := proxy.Target{
		UID: s.UID, Namespace: s.Namespace, Name: s.Name, Owner: s.Spec.Owner.Username, Reason: s.Spec.Reason,
		TargetName: session.Target(&s.Spec.Target), Level: s.Spec.AccessLevel.Group,
		ExpiresAt: s.Status.ExpiresAt.Time, ResourceVersion: s.ResourceVersion,
		Backend: backend.URL, Transport: backend.Transport, Way: way, Subject: &subject,
	}
	if s.Spec.Scope != nil {
		target.Scope = s.Spec.Scope.Namespaces
	}
	if idleAt, ok := v1alpha1.InternalIdleDeadline(s); ok {
		target.IdleAt = idleAt
	}
	if s.Status.LastUsedAt != nil {
		target.LastUsedAt = s.Status.LastUsedAt.Time
	}
	return r.tracker.Handler(target, path, responder), nil
}

// session reads the session name of ctx's namespace for a request. It is
// read from the tracker's own informer, not the storage: no decode, no
// copy, no filter of the generic store per request. That is as safe as the
// watch cache: the informer is what ends the connections of a session that
// ends, so a request admitted on an older read of it is ended as the change
// reaches the informer (or refused by the tracker's tombstone, if that
// came first), and the informer follows the watch cache of this same
// process, a loopback hop behind. What the informer does not hold yet (a
// session created a moment ago, or any before its first list) is read from
// the storage.
func (r *ProxyREST) session(ctx context.Context, name string) (*clustergate.Session, error) {
	if r.sessions != nil && r.synced() {
		cached, err := r.sessions.Sessions(genericapirequest.NamespaceValue(ctx)).Get(name)
		if err == nil {
			// A shallow copy: the internal and versioned types share their
			// layout below the object, and nothing here writes to it.
			s := &clustergate.Session{}
			if err := v1alpha1.Convert_v1alpha1_Session_To_clustergate_Session(cached, s, nil); err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	// From the watch cache, not a quorum read per request.
	obj, err := r.store.Get(ctx, name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		// The cache may not have caught up with a session created a moment
		// ago: ask etcd before saying it does not exist.
		obj, err = r.store.Get(ctx, name, &metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	return obj.(*clustergate.Session), nil
}

// check refuses anyone but the owner, and sessions that cannot be used.
func (r *ProxyREST) check(ctx context.Context, s *clustergate.Session) error {
	u, _ := genericapirequest.UserFrom(ctx)
	if !ownership.Is(u, s.Spec.Owner) {
		return apierrors.NewForbidden(clustergate.Resource("sessions/proxy"), s.Name,
			errors.New("only the session's owner may use its proxy"))
	}
	switch v1alpha1.InternalSessionStateAt(s, r.clock.Now()) {
	case v1alpha1.SessionDeleting:
		//nolint:staticcheck // SA1019: reason Gone, which clients and tests check; NewResourceExpired says Expired.
		return apierrors.NewGone(fmt.Sprintf("session %s/%s is being deleted", s.Namespace, s.Name))
	case v1alpha1.SessionAwaitingApproval:
		return notReady(s, "it waits for approval")
	case v1alpha1.SessionExpired:
		//nolint:staticcheck // SA1019: reason Gone, which clients and tests check; NewResourceExpired says Expired.
		return apierrors.NewGone(fmt.Sprintf("session %s/%s expired at %s", s.Namespace, s.Name, s.Status.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z")))
	case v1alpha1.SessionIdle:
		//nolint:staticcheck // SA1019: reason Gone, which clients and tests check; NewResourceExpired says Expired.
		return apierrors.NewGone(fmt.Sprintf("session %s/%s went idle: %s", s.Namespace, s.Name, v1alpha1.InternalIdleSince(s)))
	case v1alpha1.SessionLocked:
		msg := "locked"
		if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); c != nil {
			msg = c.Message
		}
		return lockedProxy(s, msg)
	case v1alpha1.SessionNotReady:
		reason := "its credentials are being minted"
		if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionReady); c != nil {
			reason = c.Reason + ": " + c.Message
		}
		return notReady(s, reason)
	}
	return nil
}

// lockedProxy is the 403 of a session a SessionLock holds; msg names the
// lock and its reason.
func lockedProxy(s *clustergate.Session, msg string) error {
	return apierrors.NewForbidden(clustergate.Resource("sessions/proxy"), s.Name, fmt.Errorf("session %s/%s is %s", s.Namespace, s.Name, msg))
}

// notReady is a 503 that tells the client when to try again.
func notReady(s *clustergate.Session, why string) error {
	err := apierrors.NewServiceUnavailable(fmt.Sprintf("session %s/%s is not ready: %s", s.Namespace, s.Name, why))
	err.ErrStatus.Details = &metav1.StatusDetails{Name: s.Name, Group: clustergate.GroupName, Kind: "sessions", RetryAfterSeconds: retryAfterSeconds}
	return err
}
