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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/ownership"
	"github.com/clustergate/clustergate/pkg/recording"
)

// moderators decides who may moderate a session: whoever holds the verb
// "moderate" on it, but never its owner. Following a stream as its
// moderator (sessions/recordings with ?moderate=true) and ending it
// (sessions/moderation) both ask it.
type moderators struct {
	store      *genericregistry.Store
	authorizer authorizer.Authorizer
}

// check returns the user in ctx when they may moderate session
// namespace/name, and a Status that says why not otherwise.
func (m moderators) check(ctx context.Context, namespace, name string) (user.Info, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no user")
	}
	if m.authorizer == nil || m.store == nil {
		return nil, apierrors.NewServiceUnavailable("this server cannot tell who may moderate sessions")
	}
	obj, err := m.store.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		// Only a live session's streams are moderated.
		return nil, err
	}
	s := obj.(*clustergate.Session)
	forbidden := func(why string) error {
		return apierrors.NewForbidden(clustergate.Resource("sessions"), name, errors.New(why))
	}
	if ownership.Is(u, s.Spec.Owner) {
		return nil, forbidden("the owner of a session cannot moderate it: a moderator is a second person")
	}
	decision, reason, err := m.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: v1alpha1.VerbModerate, APIGroup: clustergate.GroupName, APIVersion: "*", Resource: "sessions",
		Namespace: s.Namespace, Name: s.Name, ResourceRequest: true,
	})
	if decision != authorizer.DecisionAllow {
		why := fmt.Sprintf("moderating a session needs the verb %q on sessions in namespace %s", v1alpha1.VerbModerate, s.Namespace)
		if reason != "" {
			why += ": " + reason
		}
		if err != nil {
			why += fmt.Sprintf(" (authorization failed: %v)", err)
		}
		return nil, forbidden(why)
	}
	return u, nil
}

// ModerationREST serves sessions/moderation: a moderator ends one live
// stream of a moderated session, whichever replica relays it:
//
//	POST .../sessions/NAME/moderation/streams/STREAM?reason=...
//
// The replica that relays the stream reads the request from the recording
// store within its poll and ends the stream with a Status that names the
// moderator and the reason. Ending the whole session is revoking it
// (deleting it, with the verb "revoke").
type ModerationREST struct {
	moderators moderators
	// reader is nil when the server records nothing.
	reader *recording.Reader
}

var (
	_ rest.Connecter = &ModerationREST{}
	_ rest.Storage   = &ModerationREST{}
)

// ReasonParameter is the query parameter that says why a moderator ends a
// stream.
const ReasonParameter = "reason"

// maxEndReason bounds the reason a moderator gives.
const maxEndReason = 512

// New returns the options of a request, the path below the subresource.
func (r *ModerationREST) New() runtime.Object { return &clustergate.SessionProxyOptions{} }

// Destroy does nothing: the store is the server's.
func (r *ModerationREST) Destroy() {}

// ConnectMethods returns POST.
func (r *ModerationREST) ConnectMethods() []string { return []string{"POST"} }

// NewConnectOptions says that the path below the subresource names the
// stream.
func (r *ModerationREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &clustergate.SessionProxyOptions{}, true, "path"
}

// Connect checks that the caller may moderate the session and returns the
// handler that ends the stream the path names.
func (r *ModerationREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	options, ok := opts.(*clustergate.SessionProxyOptions)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid options %T", opts))
	}
	if r.reader == nil {
		return nil, apierrors.NewServiceUnavailable("this server records nothing (--recording=off): no stream is moderated")
	}
	parts := strings.Split(strings.Trim(options.Path, "/"), "/")
	if len(parts) != 2 || parts[0] != "streams" {
		return nil, apierrors.NewNotFound(clustergate.Resource("sessions/moderation"), name+"/"+options.Path)
	}
	stream := parts[1]
	namespace := genericapirequest.NamespaceValue(ctx)
	u, err := r.moderators.check(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		reason := req.URL.Query().Get(ReasonParameter)
		if len(reason) > maxEndReason {
			responder.Error(apierrors.NewBadRequest(fmt.Sprintf("%s: at most %d bytes", ReasonParameter, maxEndReason)))
			return
		}
		err := r.reader.EndStream(req.Context(), namespace, name, stream, u.GetName(), reason)
		switch {
		case errors.Is(err, recording.ErrNoStream):
			responder.Error(apierrors.NewNotFound(clustergate.Resource("sessions/recordings"), name+"/streams/"+stream))
			return
		case errors.Is(err, recording.ErrStreamEnded):
			responder.Error(apierrors.NewConflict(clustergate.Resource("sessions/moderation"), name+"/streams/"+stream, err))
			return
		case err != nil:
			responder.Error(apierrors.NewInternalError(fmt.Errorf("asking the stream to end: %w", err)))
			return
		}
		klog.InfoS("Moderator ended a stream", "session", klog.KRef(namespace, name), "stream", stream, "moderator", u.GetName(), "reason", reason)
		status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusOK,
			Message: fmt.Sprintf("stream %s of session %s/%s ends within a second", stream, namespace, name)}
		responder.Object(http.StatusOK, status)
	}), nil
}
