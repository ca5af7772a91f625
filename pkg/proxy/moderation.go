// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/recording"
)

// Moderated streams. A session whose access level requires a moderator
// (sessionaccess.Level.Moderated) runs an interactive stream only while a
// user who may moderate it follows its recording: the stream opens its
// recording, so that it is listed and can be followed, and waits for the
// first moderator, at most ModerationConfig.Wait; it ends with a Status
// that says why when a moderator ends it, or when the last one left (seen
// after the moderators' grace, recording.ModeratorHeartbeat). What a
// moderator cannot follow is refused: port-forward and other tunnels, a
// node's or pod's proxy upgraded, ephemeral containers created with
// their command, which runs before any attach, and writes of pods and of
// workloads' pod templates, whose commands start from the spec. Both ways
// in run this one rule, here, in the handler they share.

// Why a moderated stream ends.
var (
	// ErrModeratorLeft ends a moderated stream that no moderator follows
	// any more.
	ErrModeratorLeft = errors.New("the last moderator stopped following the stream, and the session's access level requires one")
	// ErrEndedByModerator ends a stream a moderator ended; the error that
	// wraps it names the moderator and their reason.
	ErrEndedByModerator = errors.New("a moderator ended the stream")
	// errUnmoderatable refuses a request of a moderated session that no
	// moderator could follow.
	errUnmoderatable = errors.New("cannot be followed by a moderator, which the session's access level requires")
	// errNoModerator refuses a moderated stream no moderator came to.
	errNoModerator = errors.New("no moderator followed the stream")
)

// moderatorEnd is the end of a stream a moderator asked for.
type moderatorEnd struct{ by, reason string }

func (e *moderatorEnd) Error() string {
	msg := fmt.Sprintf("moderator %s ended the stream", e.by)
	if e.reason != "" {
		msg += ": " + e.reason
	}
	return msg
}

func (e *moderatorEnd) Unwrap() error { return ErrEndedByModerator }

// DefaultModeratorWait is how long a moderated stream waits for its first
// moderator unless configured otherwise.
const DefaultModeratorWait = 2 * time.Minute

// ModerationConfig configures the streams of sessions whose access level
// requires a moderator.
type ModerationConfig struct {
	// Wait bounds how long a stream waits for its first moderator; 0 is
	// DefaultModeratorWait.
	Wait time.Duration
	// Poll is how often the relay looks for moderators; 0 is
	// recording.DefaultModerationPoll.
	Poll time.Duration
	// Events, when set, is told of moderators who come and go and of the
	// streams they end or that none came to, for the session's events.
	Events func(t Target, eventType, reason, message string)
}

// Moderate configures moderated streams.
func (r *Tracker) Moderate(cfg ModerationConfig) {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultModeratorWait
	}
	r.moderation = cfg
}

// moderationFor decides on a request of a session whose access level
// requires a moderator, from what recording makes of it (seen), on a
// server that records (recording) or not: an interactive stream waits for
// its moderator (await); what a moderator cannot follow is refused with an
// error that wraps errUnmoderatable; the rest, which runs nothing (reads,
// writes of objects, logs, watches), passes and is in the request log.
func moderationFor(seen inspection, recording bool) (await bool, err error) {
	switch {
	case seen.recorded && !recording:
		return false, fmt.Errorf("an interactive stream (%s) %w: moderators follow its recording, and this server records nothing (--recording=off)",
			seen.stream.Subresource, errUnmoderatable)
	case seen.recorded:
		return true, nil
	case seen.unrecordable != "":
		return false, fmt.Errorf("%s %w: port-forward, upgraded proxies and ephemeral containers (kubectl debug) are refused; "+
			"use kubectl exec or attach, which wait for a moderator", seen.unrecordable, errUnmoderatable)
	case seen.starts != "":
		return false, fmt.Errorf("%s %w: what a new pod runs (kubectl run, kubectl debug node/NAME or --copy-to, a Job, a Deployment) "+
			"starts with no stream to follow; use kubectl exec or attach in a running pod, which wait for a moderator", seen.starts, errUnmoderatable)
	}
	return false, nil
}

// moderatedStream is a moderated stream as its relay sees it: who
// moderates it now, as its recording reads the store, and what ends it.
type moderatedStream struct {
	target Target
	config ModerationConfig
	stream *recording.Stream
	// end ends the request, with its cause.
	end context.CancelCauseFunc

	mu sync.Mutex
	// present are the moderators now; came is closed once one came;
	// started is set once the stream reached the target.
	present []string
	came    chan struct{}
	started bool
}

func newModeratedStream(t Target, config ModerationConfig, end context.CancelCauseFunc) *moderatedStream {
	return &moderatedStream{target: t, config: config, end: end, came: make(chan struct{})}
}

// watch starts following the moderators of stream.
func (m *moderatedStream) watch(stream *recording.Stream) {
	m.stream = stream
	stream.WatchModerators(m.config.Poll, m.update)
}

// update takes who moderates the stream now.
func (m *moderatedStream) update(now recording.Moderation) {
	m.mu.Lock()
	joined := without(now.Moderators, m.present)
	left := without(m.present, now.Moderators)
	m.present = now.Moderators
	if len(now.Moderators) > 0 {
		select {
		case <-m.came:
		default:
			close(m.came)
		}
	}
	lastLeft := m.started && len(now.Moderators) == 0
	m.mu.Unlock()
	for _, user := range joined {
		m.event(corev1.EventTypeNormal, "ModeratorJoined", "%s follows stream %s as its moderator", user, m.stream.ID())
	}
	for _, user := range left {
		m.event(corev1.EventTypeNormal, "ModeratorLeft", "%s stopped following stream %s", user, m.stream.ID())
	}
	switch {
	case now.EndedBy != "":
		m.event(corev1.EventTypeWarning, "StreamEndedByModerator", "%s ended stream %s: %s", now.EndedBy, m.stream.ID(), now.EndReason)
		m.end(&moderatorEnd{by: now.EndedBy, reason: now.EndReason})
	case lastLeft:
		m.event(corev1.EventTypeWarning, "ModeratorsLeft", "stream %s ended: no moderator follows it any more", m.stream.ID())
		m.end(ErrModeratorLeft)
	}
}

// without returns the members of a that are not in b.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func (m *moderatedStream) event(eventType, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t := m.target
	klog.InfoS("Moderated stream", "session", klog.KRef(t.Namespace, t.Name), "event", reason, "message", logString(msg))
	if m.config.Events != nil {
		m.config.Events(t, eventType, reason, msg)
	}
}

// await waits for the first moderator, at most the configured wait, and
// marks the stream started; an error says why it will not start: the
// request's end, or no moderator in time (a Status). waiting is called
// once, if the stream has to wait at all.
func (m *moderatedStream) await(ctx context.Context, waiting func()) error {
	select {
	case <-m.came:
	default:
		if waiting != nil {
			waiting()
		}
		timer := time.NewTimer(m.config.Wait)
		defer timer.Stop()
		select {
		case <-m.came:
		case <-timer.C:
			m.event(corev1.EventTypeWarning, "ModeratorMissing", "stream %s refused: no moderator followed it within %s", m.stream.ID(), m.config.Wait)
			return m.refusal(fmt.Errorf("%w %s within %s: ask someone who may moderate it to run `kubectl session moderate %s -n %s` and try again",
				errNoModerator, m.stream.ID(), m.config.Wait, m.target.Name, m.target.Namespace))
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = true
	if len(m.present) == 0 {
		// The moderator who came left before the stream started.
		m.end(ErrModeratorLeft)
	}
	return nil
}

// refusal is the 403 of a moderated stream.
func (m *moderatedStream) refusal(err error) *apierrors.StatusError {
	t := m.target
	return apierrors.NewForbidden(sessionProxy, t.Name, fmt.Errorf("session %s/%s is moderated: %w", t.Namespace, t.Name, err))
}

// waitingMessage is what the owner's terminal shows while the stream
// waits.
func (m *moderatedStream) waitingMessage() string {
	t := m.target
	return fmt.Sprintf("clustergate: session %s/%s is moderated: stream %s waits for a moderator (up to %s); "+
		"a moderator runs: kubectl session moderate %s -n %s\r\n", t.Namespace, t.Name, m.stream.ID(), m.config.Wait,
		t.Name, t.Namespace)
}

// moderationEnd tells the causes with which moderation ends a stream.
func moderationEnd(err error) bool {
	return errors.Is(err, ErrModeratorLeft) || errors.Is(err, ErrEndedByModerator)
}
