// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
)

// A moderated stream learns of its moderators from the recording store,
// beside its chunks, whichever replica they follow it through: the replica
// that serves a moderator's follow writes a signed moderator mark,
// moderation-<hash of the user>.json, as the follow starts and again every
// ModeratorHeartbeat while it runs; a moderator who ends the stream writes
// a signed moderation-end.json. The replica that relays the stream lists
// them every ModerationPoll (one LIST of the store, and a GET per object)
// and takes a moderator for present while the mark changed within
// moderatorTTL by its own clock, so that the replicas' clocks never
// matter, and a follow that kube-apiserver cuts and the client asks for
// again (every 60 s on the aggregated path) does not count as leaving.
const (
	// ModeratorHeartbeat is how often a moderator's follow writes its mark.
	ModeratorHeartbeat = 2 * time.Second
	// moderatorTTL is how long a moderator whose mark stopped changing
	// still counts: the stream ends that long after the last one left.
	moderatorTTL = 5 * ModeratorHeartbeat
	// DefaultModerationPoll is how often the relay of a moderated stream
	// looks for its moderators: a moderator who comes is seen within it
	// (and a write and a list of the store).
	DefaultModerationPoll = 500 * time.Millisecond

	moderationPrefix  = "moderation-"
	moderationEnd     = moderationPrefix + "end.json"
	moderatorMarkKind = "clustergate.dev/recording-moderator/v1"
	moderationEndKind = "clustergate.dev/recording-moderation-end/v1"
)

// ErrStreamEnded is EndStream's error for a stream that ended already.
var ErrStreamEnded = errors.New("the stream ended already")

// moderatorMark is what a moderator's follow signs: that User followed the
// stream under dir at Time.
type moderatorMark struct {
	User string    `json:"user"`
	Time time.Time `json:"time"`
	Key  string    `json:"key"`
	MAC  string    `json:"mac"`
}

func (m *moderatorMark) signedBytes(dir string) []byte {
	data, _ := json.Marshal([]any{moderatorMarkKind, dir, m.User, m.Time.UnixNano()})
	return data
}

// endRequest is what a moderator who ends the stream under dir signs.
type endRequest struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
	Key    string    `json:"key"`
	MAC    string    `json:"mac"`
}

func (e *endRequest) signedBytes(dir string) []byte {
	data, _ := json.Marshal([]any{moderationEndKind, dir, e.By, e.Reason, e.Time.UnixNano()})
	return data
}

// moderatorKey is the key of user's mark in the stream under dir: a hash,
// since a user name may hold any character.
func moderatorKey(dir, user string) string {
	sum := sha256.Sum256([]byte(user))
	return dir + moderationPrefix + hex.EncodeToString(sum[:8]) + ".json"
}

// Moderate marks user as a moderator of the live stream c, which this
// replica follows for them, until the returned stop is called: it writes
// the user's signed mark now (an error refuses the follow) and again every
// ModeratorHeartbeat, and removes it at stop.
func (r Reader) Moderate(ctx context.Context, c *Cast, user string) (stop func(), err error) {
	key := moderatorKey(c.dir, user)
	write := func(ctx context.Context) error {
		mark := moderatorMark{User: user, Time: time.Now()}
		mark.Key, mark.MAC = r.Keys.sign(mark.signedBytes(c.dir))
		data, _ := json.Marshal(mark)
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return r.Store.Put(wctx, key, data)
	}
	if err := write(ctx); err != nil {
		return nil, fmt.Errorf("the moderator mark cannot be written: %w", err)
	}
	moderatorFollows.Inc()
	beat, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ModeratorHeartbeat)
		defer tick.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-tick.C:
				if err := write(beat); err != nil && beat.Err() == nil {
					klog.ErrorS(err, "Moderator mark not written", "stream", c.info.Stream, "moderator", user)
				}
			}
		}
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-done
		moderatorFollows.Dec()
		dctx, dcancel := context.WithTimeout(context.Background(), writeTimeout)
		defer dcancel()
		_ = r.Store.Delete(dctx, key)
	}), nil
}

// EndStream asks the replica that relays the live stream of the session
// namespace/name to end it, for by, saying reason: a signed
// moderation-end.json beside its chunks, which that replica reads within
// its ModerationPoll. ErrNoStream when there is no such stream,
// ErrStreamEnded when it has its manifest.
func (r Reader) EndStream(ctx context.Context, namespace, name, stream, by, reason string) error {
	if store.CheckKey(stream) != nil || strings.Contains(stream, "/") {
		return ErrNoStream
	}
	objects, err := r.Store.List(ctx, sessionPrefix(namespace, name))
	if err != nil {
		return err
	}
	var dir string
	ended := false
	for _, o := range objects {
		d, object, ok := streamObject(o.Key)
		if !ok || !strings.HasSuffix(d, "/"+stream) {
			continue
		}
		switch object {
		case infoObject:
			dir = d + "/"
		case manifestObject:
			ended = true
		}
	}
	switch {
	case dir == "":
		return ErrNoStream
	case ended:
		return ErrStreamEnded
	}
	end := endRequest{By: by, Reason: reason, Time: time.Now()}
	end.Key, end.MAC = r.Keys.sign(end.signedBytes(dir))
	data, _ := json.Marshal(end)
	return r.Store.Put(ctx, dir+moderationEnd, data)
}

// Moderation is what the relay of a moderated stream is told: who
// moderates it now, in the order they came, and, once a moderator ended
// it, who and why.
type Moderation struct {
	Moderators []string
	EndedBy    string
	EndReason  string
}

// moderators follows the moderator marks of one stream, by the clock of
// the replica that relays it.
type moderators struct {
	// seen is the time of each user's mark as last read, and when this
	// replica read it changed; periods are every moderator's time.
	seen    map[string]markSeen
	periods []v1alpha1.RecordingModerator
	// open are the indexes in periods of the moderators present.
	open map[string]int
}

type markSeen struct {
	mark    time.Time
	changed time.Time
}

// observe takes the marks read at now and returns who is present.
func (m *moderators) observe(now time.Time, marks []moderatorMark) []string {
	for _, mark := range marks {
		if s, ok := m.seen[mark.User]; !ok || !s.mark.Equal(mark.Time) {
			m.seen[mark.User] = markSeen{mark: mark.Time, changed: now}
		}
	}
	var present []string
	for user, s := range m.seen {
		i, open := m.open[user]
		switch fresh := now.Sub(s.changed) < moderatorTTL; {
		case fresh && !open:
			m.open[user] = len(m.periods)
			m.periods = append(m.periods, v1alpha1.RecordingModerator{User: user, From: now, To: now})
			present = append(present, user)
		case fresh:
			m.periods[i].To = now
			present = append(present, user)
		case open:
			delete(m.open, user)
		}
	}
	slices.SortFunc(present, func(a, b string) int { return m.open[a] - m.open[b] })
	return present
}

// close ends every open period at end.
func (m *moderators) close(end time.Time) {
	for _, i := range m.open {
		m.periods[i].To = end
	}
	clear(m.open)
}

// WatchModerators marks the stream as moderated and looks for its
// moderators every poll, from its own goroutine, until the stream closes,
// telling onChange whenever who moderates it changes or a moderator ends
// it. A mark that is not signed with one of the server's keys, or that
// names the session's owner, never counts. The moderators' times go into
// the stream's manifest (Moderators).
func (s *Stream) WatchModerators(poll time.Duration, onChange func(Moderation)) {
	if poll <= 0 {
		poll = DefaultModerationPoll
	}
	s.mu.Lock()
	s.moderation = &moderators{seen: map[string]markSeen{}, open: map[string]int{}}
	s.mu.Unlock()
	go func() {
		tick := s.recorder.cfg.Clock.NewTicker(poll)
		defer tick.Stop()
		var last Moderation
		first := true
		for {
			now := Moderation{}
			marks, end, err := s.readModeration()
			if err != nil {
				klog.ErrorS(err, "Moderators of a stream not read", "session", klog.KRef(s.info.Namespace, s.info.Name), "stream", s.info.Stream)
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			if err == nil {
				now.Moderators = s.moderation.observe(s.recorder.cfg.Clock.Now(), marks)
			} else {
				now.Moderators = last.Moderators
			}
			s.mu.Unlock()
			if end != nil {
				now.EndedBy, now.EndReason = end.By, end.Reason
			}
			if first || !slices.Equal(now.Moderators, last.Moderators) || now.EndedBy != last.EndedBy {
				onChange(now)
			}
			first, last = false, now
			select {
			case <-s.closing:
				return
			case <-tick.C():
			}
		}
	}()
}

// readModeration reads the signed moderator marks and end request of the
// stream.
func (s *Stream) readModeration() ([]moderatorMark, *endRequest, error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	st, keys := s.recorder.cfg.Store, s.recorder.cfg.Keys
	objects, err := st.List(ctx, s.prefix+moderationPrefix)
	if err != nil {
		return nil, nil, err
	}
	var marks []moderatorMark
	var end *endRequest
	for _, o := range objects {
		data, err := st.Get(ctx, o.Key)
		if errors.Is(err, store.ErrNotFound) {
			// A moderator left meanwhile.
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if strings.HasSuffix(o.Key, "/"+moderationEnd) {
			var e endRequest
			if json.Unmarshal(data, &e) == nil && verifiedOrUnkeyed(keys, e.Key, e.MAC, e.signedBytes(s.prefix)) {
				end = &e
			}
			continue
		}
		var mark moderatorMark
		if json.Unmarshal(data, &mark) != nil || o.Key != moderatorKey(s.prefix, mark.User) || mark.User == s.info.Owner ||
			!verifiedOrUnkeyed(keys, mark.Key, mark.MAC, mark.signedBytes(s.prefix)) {
			continue
		}
		marks = append(marks, mark)
	}
	return marks, end, nil
}

// verifiedOrUnkeyed checks a signature with the server's keys; a server
// without keys signs nothing and takes what its own store holds.
func verifiedOrUnkeyed(keys *ManifestKeys, id, mac string, data []byte) bool {
	return keys == nil || keys.verify(id, mac, data) == nil
}

// Moderators are who moderated the stream so far, from when to when.
func (s *Stream) Moderators() []v1alpha1.RecordingModerator {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.moderation == nil {
		return nil
	}
	return slices.Clone(s.moderation.periods)
}
