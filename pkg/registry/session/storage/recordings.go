// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package storage

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording"
)

// RecordingsREST serves sessions/recordings, read-only: the recorded
// streams of a session and its request log. It reads the recording store,
// not the Session, so that recordings stay readable after the session is
// gone, for as long as the store keeps them. Under one name it serves
// every session that had that name:
//
//	GET .../sessions/NAME/recordings                  the streams (JSON)
//	GET .../sessions/NAME/recordings/requests         the request log (JSON, streamed; limit and continue page it)
//	GET .../sessions/NAME/recordings/streams/STREAM   one stream (asciicast v2)
//
// With ?follow=true the last two keep the answer open: a live stream's
// asciicast is sent as its writer stores each chunk and ends with the
// stream, its manifest checked (recording.Reader.Follow); the request log
// is sent as JSON lines, then each entry as it is stored, until the client
// goes away.
//
// A stream is served only when its writer vouches for it (a signed
// manifest that describes it, or a recent live mark, see
// recording.Reader.OpenCast), unless the request asks for it with
// ?unverified=true: then the answer carries a Warning and the asciicast's
// header says why it is not verified.
//
// ?moderate=true with ?follow=true follows a live stream as its moderator
// (moderators.check): the stream, if its session's access level requires
// a moderator, runs while one does (recording.Reader.Moderate).
type RecordingsREST struct {
	// reader is nil when the server records nothing.
	reader     *recording.Reader
	moderators moderators
}

var (
	_ rest.Connecter = &RecordingsREST{}
	_ rest.Storage   = &RecordingsREST{}
)

// Kinds of what sessions/recordings answers with: v1alpha1's
// SessionRecordingList and SessionRequestLog.
const (
	RecordingListKind = "SessionRecordingList"
	RequestLogKind    = "SessionRequestLog"
	// CastContentType is asciicast v2's media type.
	CastContentType = "application/x-asciicast"
	// RequestLogFollowContentType is the type of a followed request log:
	// one JSON entry a line.
	RequestLogFollowContentType = "application/jsonl"
)

// New returns the options of a request, the path below the subresource.
func (r *RecordingsREST) New() runtime.Object { return &clustergate.SessionProxyOptions{} }

// Destroy does nothing: the store is the server's.
func (r *RecordingsREST) Destroy() {}

// ConnectMethods returns GET: recordings are never changed through the API.
func (r *RecordingsREST) ConnectMethods() []string { return []string{"GET"} }

// NewConnectOptions says that the path below the subresource picks what is
// read.
func (r *RecordingsREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &clustergate.SessionProxyOptions{}, true, "path"
}

// Connect returns the handler that reads what the path names.
func (r *RecordingsREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	options, ok := opts.(*clustergate.SessionProxyOptions)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid options %T", opts))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || namespace == "" {
		return nil, apierrors.NewBadRequest("sessions/recordings needs a namespace")
	}
	if r.reader == nil {
		return nil, apierrors.NewServiceUnavailable("this server records nothing (--recording=off)")
	}
	path := strings.Trim(options.Path, "/")
	notFound := apierrors.NewNotFound(clustergate.Resource("sessions/recordings"), name+"/"+path)
	var body any
	var err error
	switch parts := strings.Split(path, "/"); {
	case path == "":
		list := &v1alpha1.SessionRecordingList{TypeMeta: metav1.TypeMeta{Kind: RecordingListKind, APIVersion: v1alpha1.SchemeGroupVersion.String()}}
		list.Items, err = r.reader.Streams(ctx, namespace, name)
		if list.Items == nil {
			list.Items = []v1alpha1.SessionRecording{}
		}
		body = list
	case path == "requests":
		return r.requestLog(namespace, name, responder), nil
	case len(parts) == 2 && parts[0] == "streams":
		return r.cast(namespace, name, parts[1], notFound, responder), nil
	default:
		return nil, notFound
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the recordings: %w", err))
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}), nil
}

// UnverifiedParameter is the query parameter that asks for a recorded
// stream that cannot be verified.
const UnverifiedParameter = "unverified"

// cast returns the handler that writes a recorded stream as asciicast.
// Whether unverified is asked for is read from the request's query, which
// the subresource's options do not carry.
func (r *RecordingsREST) cast(namespace, name, stream string, notFound error, responder rest.Responder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		unverified := req.URL.Query().Get(UnverifiedParameter) == "true"
		moderator := ""
		if req.URL.Query().Get(v1alpha1.ModerateParameter) == "true" {
			if !Following(req) {
				responder.Error(apierrors.NewBadRequest(fmt.Sprintf("?%s=true follows a stream as its moderator: it needs ?%s=true", v1alpha1.ModerateParameter, FollowParameter)))
				return
			}
			u, err := r.moderators.check(req.Context(), namespace, name)
			if err != nil {
				responder.Error(err)
				return
			}
			moderator = u.GetName()
		}
		cast, err := r.reader.OpenCast(req.Context(), namespace, name, stream, unverified)
		switch {
		case errors.Is(err, recording.ErrNoStream):
			if why := r.reader.OutOfReach(stream); why != "" {
				responder.Error(apierrors.NewServiceUnavailable(why))
				return
			}
			responder.Error(notFound)
			return
		case errors.Is(err, recording.ErrNotAsWritten):
			// Conflict: what is stored conflicts with what its writer
			// vouched for; nothing the caller may or may not do, and
			// nothing a retry changes.
			responder.Error(apierrors.NewConflict(clustergate.Resource("sessions/recordings"), name+"/streams/"+stream,
				fmt.Errorf("%w; read it anyway with ?%s=true (kubectl session replay --unverified)", err, UnverifiedParameter)))
			return
		case err != nil:
			responder.Error(apierrors.NewInternalError(fmt.Errorf("reading the recording: %w", err)))
			return
		}
		w.Header().Set("Content-Type", CastContentType)
		if v := cast.Verification(); v != v1alpha1.RecordingVerified {
			klog.InfoS("Recording read although not verified", "session", klog.KRef(namespace, name), "stream", stream, "verification", v)
			warning.AddWarning(req.Context(), "", "recording "+stream+" is "+v)
		}
		if Following(req) {
			if moderator != "" && cast.Verification() == v1alpha1.RecordingLive {
				stop, err := r.reader.Moderate(req.Context(), cast, moderator)
				if err != nil {
					responder.Error(apierrors.NewServiceUnavailable(fmt.Sprintf("following stream %s as its moderator: %v", stream, err)))
					return
				}
				defer stop()
				klog.InfoS("Moderator follows a stream", "session", klog.KRef(namespace, name), "stream", stream, "moderator", moderator)
			}
			r.follow(req.Context(), namespace, name, stream, cast, w)
			return
		}
		// The asciicast is written as it is built, so that a long
		// recording never sits in the server's memory whole.
		if err := cast.Write(req.Context(), w); err != nil {
			klog.ErrorS(err, "Recording not read to its end", "session", klog.KRef(namespace, name), "stream", stream)
			// Abort the response: the client must not take what it got
			// for the whole recording.
			panic(http.ErrAbortHandler)
		}
	})
}

// FollowParameter is the query parameter that keeps the answer open and
// sends a live stream's recording, or the request log, as it is written.
const FollowParameter = "follow"

// Following says whether a request to sessions/recordings asks to follow:
// the server counts it as long-running, not cut at the request timeout.
func Following(req *http.Request) bool { return req.URL.Query().Get(FollowParameter) == "true" }

// follow writes the stream's asciicast as its writer stores it, until the
// stream ends or the client goes away (the request's context ends). An
// end that is not verified aborts the answer after the event that says
// why: the client must not take it for the whole recording.
func (r *RecordingsREST) follow(ctx context.Context, namespace, name, stream string, cast *recording.Cast, w http.ResponseWriter) {
	flush := flusher(w)
	// The client learns at once that it follows, not at the first output.
	w.WriteHeader(http.StatusOK)
	flush()
	err := r.reader.Follow(ctx, cast, w, flush)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// The client went away.
	default:
		klog.ErrorS(err, "Follow of a recording ended before its verified end", "session", klog.KRef(namespace, name), "stream", stream)
		panic(http.ErrAbortHandler)
	}
}

// flusher returns what sends what w holds to the client now.
func flusher(w http.ResponseWriter) func() {
	rc := http.NewResponseController(w)
	return func() { _ = rc.Flush() }
}

// requestLog writes the request log as a list whose items are written as
// they are read, so that a log of any length never sits in the server's
// memory whole. Like a Kubernetes list it takes limit and continue and
// answers with metadata.continue while entries are left.
func (r *RecordingsREST) requestLog(namespace, name string, responder rest.Responder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		query := req.URL.Query()
		if Following(req) {
			r.followRequestLog(namespace, name, w, req)
			return
		}
		limit := 0
		if s := query.Get("limit"); s != "" {
			var err error
			if limit, err = strconv.Atoi(s); err != nil || limit < 0 {
				responder.Error(apierrors.NewBadRequest(fmt.Sprintf("limit %q is not a number of entries", s)))
				return
			}
		}
		sent := &sentWriter{w: w}
		out := bufio.NewWriterSize(sent, 32<<10)
		// A v1alpha1.SessionRequestLog, its items written as they are read.
		fmt.Fprintf(out, `{"kind":%q,"apiVersion":%q,"items":[`, RequestLogKind, v1alpha1.SchemeGroupVersion.String())
		enc := json.NewEncoder(out)
		first := true
		next, err := r.reader.Requests(req.Context(), namespace, name, limit, query.Get("continue"), func(entry *v1alpha1.RequestLogEntry) error {
			if !first {
				_ = out.WriteByte(',')
			}
			first = false
			return enc.Encode(entry)
		})
		switch {
		case err != nil && sent.n == 0:
			// Nothing reached the client: it gets a Status instead.
			if errors.Is(err, recording.ErrBadContinue) {
				responder.Error(apierrors.NewBadRequest(fmt.Sprintf("continue: %v", err)))
				return
			}
			responder.Error(apierrors.NewInternalError(fmt.Errorf("reading the request log: %w", err)))
			return
		case err != nil:
			klog.ErrorS(err, "Request log not read to its end", "session", klog.KRef(namespace, name))
			// Abort the response: the client must not take what it got
			// for the whole log.
			panic(http.ErrAbortHandler)
		}
		metadata, _ := json.Marshal(metav1.ListMeta{Continue: next})
		fmt.Fprintf(out, `],"metadata":%s}`, metadata)
		_ = out.Flush()
	})
}

// followRequestLog writes the request log as JSON lines, one entry a line,
// and then each entry as its chunk is stored, until the client goes away.
func (r *RecordingsREST) followRequestLog(namespace, name string, w http.ResponseWriter, req *http.Request) {
	flush := flusher(w)
	w.Header().Set("Content-Type", RequestLogFollowContentType)
	w.WriteHeader(http.StatusOK)
	flush()
	out := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(out)
	err := r.reader.FollowRequests(req.Context(), namespace, name, func(entry *v1alpha1.RequestLogEntry) error { return enc.Encode(entry) }, func() {
		_ = out.Flush()
		flush()
	})
	if err != nil && req.Context().Err() == nil {
		klog.ErrorS(err, "Follow of a request log ended", "session", klog.KRef(namespace, name))
		panic(http.ErrAbortHandler)
	}
}

// sentWriter counts what reached the client, and says the answer is JSON
// as it starts.
type sentWriter struct {
	w http.ResponseWriter
	n int
}

func (s *sentWriter) Write(b []byte) (int, error) {
	if s.n == 0 {
		s.w.Header().Set("Content-Type", "application/json")
	}
	n, err := s.w.Write(b)
	s.n += n
	return n, err
}
