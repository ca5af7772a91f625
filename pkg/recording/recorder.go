// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/recording/store"
	"github.com/clustergate/clustergate/pkg/sessionevents"
)

// Defaults of Config.
const (
	DefaultFlushInterval = 2 * time.Second
	DefaultQueueBytes    = 8 << 20
	// writeTimeout bounds one write to the store.
	writeTimeout = 10 * time.Second
)

// Config configures a Recorder.
type Config struct {
	Store store.Store
	Mode  Mode
	// Replica names this server replica in recordings and request logs.
	Replica string
	// FlushInterval is how often recordings and request logs are written
	// while they grow: what a replica that dies may lose.
	FlushInterval time.Duration
	// QueueBytes bounds what a stream may have captured and not yet
	// handed to the store; a stream that outruns its recording by more
	// waits for it.
	QueueBytes int
	// Retention is how long recordings are kept; 0 keeps them.
	Retention time.Duration
	// Keys sign manifests and live marks; without them recordings are
	// written unsigned, and a Reader refuses them unless asked for
	// unverified ones.
	Keys  *ManifestKeys
	Clock clock.WithTicker
}

// Recorder records the streams and requests of sessions on this replica.
type Recorder struct {
	cfg  Config
	boot string

	mu       sync.Mutex
	requests map[requestLogKey]*requestBuffer
	seq      int

	// failures is told of every failed recording; nil tells nobody.
	failures FailureReporter
}

// FailureReporter is told once of each stream whose recording fails: the
// session events' outbox, which makes a recording_failed event of it. It
// is called on the stream's path (OpenStream, the recording's goroutine)
// and must not block.
type FailureReporter interface {
	RecordingFailed(sessionevents.RecordingFailure)
}

// ReportFailuresTo has r told of every recording that fails from now on;
// set before the recorder records.
func (r *Recorder) ReportFailuresTo(f FailureReporter) { r.failures = f }

// reportFailure tells the failure reporter, if any.
func (r *Recorder) reportFailure(info v1alpha1.RecordingInfo, outcome sessionevents.RecordingOutcome) {
	if r.failures != nil {
		r.failures.RecordingFailed(sessionevents.RecordingFailure{Info: info, Outcome: outcome, At: r.cfg.Clock.Now()})
	}
}

// New returns a recorder; nil when the mode is off.
func New(cfg Config) *Recorder {
	if cfg.Mode == ModeOff || cfg.Mode == "" || cfg.Store == nil {
		return nil
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Recorder{cfg: cfg, boot: fmt.Sprintf("%d", cfg.Clock.Now().UnixNano()), requests: map[requestLogKey]*requestBuffer{}}
}

// Required says whether streams must not run unrecorded.
func (r *Recorder) Required() bool { return r.cfg.Mode == ModeRequired }

// Replica is the name of this replica in recordings.
func (r *Recorder) Replica() string { return r.cfg.Replica }

// Run writes request logs every FlushInterval and deletes recordings past
// retention every hour (and once at start) until ctx ends; then it writes
// what is left.
func (r *Recorder) Run(ctx context.Context) {
	flush := r.cfg.Clock.NewTicker(r.cfg.FlushInterval)
	defer flush.Stop()
	sweep := r.cfg.Clock.NewTicker(sweepInterval)
	defer sweep.Stop()
	r.sweep(ctx)
	for {
		select {
		case <-ctx.Done():
			r.flushRequests(context.Background())
			return
		case <-flush.C():
			r.flushRequests(ctx)
		case <-sweep.C():
			r.sweep(ctx)
		}
	}
}

// newStreamID names a stream by its start, the replica and a random
// suffix, so that the streams of a session sort by start and replicas that
// share a bucket never write the same keys (replicas of the same name are
// told apart by the suffix).
func newStreamID(start time.Time, replica string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := start.UTC().Format("20060102T150405Z") + "-"
	if r := keySafe(replica); r != "" {
		id += r + "-"
	}
	return id + hex.EncodeToString(b)
}

// keySafe keeps the letters, digits, '.' and '-' of a name, for a key.
func keySafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return -1
	}, name)
}

// OpenStream starts the recording of an interactive stream. It writes the
// stream's info first: when that fails, a required recording returns the
// error (the stream must be refused) and a best-effort one returns a
// stream that records nothing.
func (r *Recorder) OpenStream(ctx context.Context, info v1alpha1.RecordingInfo) (*Stream, error) {
	info.StartTime = r.cfg.Clock.Now()
	info.Stream = newStreamID(info.StartTime, r.cfg.Replica)
	info.Replica = r.cfg.Replica
	s := &Stream{recorder: r, info: info, prefix: streamPrefix(info.RecordedSession, info.Stream), capturing: true,
		captureSum: sha256.New().(hash.Cloner), wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	s.space = sync.NewCond(&s.mu)
	data, err := json.Marshal(info)
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err = r.cfg.Store.Put(wctx, s.prefix+infoObject, data)
		cancel()
	}
	if err != nil {
		writeFailures.Inc()
		if r.Required() {
			refusedStreams.Inc()
			r.reportFailure(info, sessionevents.StreamRefused)
			return nil, fmt.Errorf("the recording cannot be written: %w", err)
		}
		r.reportFailure(info, sessionevents.StreamUnrecorded)
		klog.ErrorS(err, "Recording not started; the stream runs unrecorded (best-effort)", "session", klog.KRef(info.Namespace, info.Name), "stream", info.Stream)
		failedStreams.Inc()
		s.failed = err
		close(s.done)
		return s, nil
	}
	infoSum := sha256.Sum256(data)
	s.infoSHA256 = hex.EncodeToString(infoSum[:])
	recordedStreams.Inc()
	writtenBytes.Add(float64(len(data)))
	go s.run()
	return s, nil
}
