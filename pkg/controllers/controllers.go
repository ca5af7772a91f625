// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllers runs clustergate's controllers: those that write run
// only on the replica holding a Lease in the core cluster.
package controllers

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/controllers/expiredlocks"
	"github.com/clustergate/clustergate/pkg/controllers/gardenerclusterkubeconfigs"
	"github.com/clustergate/clustergate/pkg/controllers/sessionevents"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
	"github.com/clustergate/clustergate/pkg/gardener"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned/scheme"
	clustergatev1alpha1informers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/sessionevents/sinks"
)

// LeaseName is the Lease the writing controllers are elected with.
const LeaseName = "clustergate-controllers"

// Options are the controllers' settings, as the flags give them.
type Options struct {
	// Gardener reaches the Gardener project; with no project the kubeconfig
	// controller does not run.
	Gardener gardener.Config
	// GardenerClusterKubeconfigs configures the GardenerClusterKubeconfig controller.
	GardenerClusterKubeconfigs gardenerclusterkubeconfigs.Options
	// Sessions configures the Session controller.
	Sessions sessions.Options
	// LeaderElect elects one replica to run the controllers; off, every
	// replica runs them (for a single replica).
	LeaderElect bool
	// LeaseNamespace holds the Lease.
	LeaseNamespace string
	// LockRetention is how long an expired SessionLock stays before it is
	// deleted; 0 keeps it.
	LockRetention time.Duration
	// SessionEventSinks are where session events go
	// (--session-event-sinks-config), reloaded when the file changes; nil:
	// nowhere, and none is stored.
	SessionEventSinks *sinks.File
}

// EventDelivery is what session events need: the outbox and the sinks in
// effect.
type EventDelivery struct {
	Outbox sessionevents.Store
	Sinks  sessionevents.Sinks
}

// DefaultOptions are the controllers' settings: elected leader, expired
// SessionLocks kept a week. The server passes its namespace down to
// Sessions.Namespace and, unless given, LeaseNamespace.
func DefaultOptions() Options {
	return Options{
		Gardener:                   gardener.DefaultConfig(),
		GardenerClusterKubeconfigs: gardenerclusterkubeconfigs.DefaultOptions(),
		Sessions:                   sessions.DefaultOptions(),
		LeaderElect:                true,
		LockRetention:              7 * 24 * time.Hour,
	}
}

// Validate checks the options of every controller, naming the flags that
// give them.
func (o Options) Validate() []error {
	errs := o.Gardener.Validate()
	errs = append(errs, o.GardenerClusterKubeconfigs.Validate()...)
	errs = append(errs, o.Sessions.Validate()...)
	if o.LockRetention < 0 {
		errs = append(errs, fmt.Errorf("--session-lock-retention may not be negative"))
	}
	return errs
}

// Config is what the controllers run with: their options and the clients
// and caches the server built.
type Config struct {
	Options
	// Loopback reaches clustergate's own API.
	Loopback *rest.Config
	// Core reaches the core cluster: Secrets, events and the Lease.
	Core *rest.Config
	// SessionInformer, KubeconfigInformer and CredentialInformer are the
	// caches of Sessions, GardenerClusterKubeconfigs and the sessions'
	// credentials Secrets that every replica keeps for the proxy and the
	// metrics: the controllers share them rather than keep copies of their
	// own. Their owner starts them.
	SessionInformer    clustergatev1alpha1informers.SessionInformer
	KubeconfigInformer clustergatev1alpha1informers.GardenerClusterKubeconfigInformer
	CredentialInformer coreinformers.SecretInformer
	// LockInformer is the cache of SessionLocks, which the proxy keeps too.
	LockInformer clustergatev1alpha1informers.SessionLockInformer
	// GardenerClient is the server's Gardener client, whose cache of
	// projects' namespaces TargetAccess shares; nil without a Gardener
	// project.
	GardenerClient *gardener.Client
	// Events stores and delivers session events; nil without
	// SessionEventSinks.
	Events *EventDelivery
}

// Run runs the controllers until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	kube, err := kubernetes.NewForConfig(controllerutil.Protobuf(cfg.Core))
	if err != nil {
		return err
	}
	istio, err := istioclient.NewForConfig(cfg.Core)
	if err != nil {
		return err
	}
	client, err := versioned.NewForConfig(cfg.Loopback)
	if err != nil {
		return err
	}
	g := cfg.GardenerClient
	if g == nil {
		logger.Info("No --gardener-project: the GardenerClusterKubeconfig controller is off and sessions reach clusters only")
	} else {
		// Every replica probes, leader or not: each reports whether it
		// reaches Gardener.
		go g.Probe(ctx, cfg.Gardener.ProbeInterval)
	}

	run := func(ctx context.Context) {
		broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
		broadcaster.StartRecordingToSink(ctx.Done())
		defer broadcaster.Shutdown()
		recorder := broadcaster.NewRecorder(scheme.Scheme, "clustergate")

		// A nil *Client must reach the session controller as a nil
		// interface: it checks for "no Gardener project" that way.
		var gardenerSessions gardener.Requester
		if g != nil {
			gardenerSessions = g
		}
		// The Secrets marked as cluster targets, in the server's namespace:
		// only the leader reaches targets, so only it caches them.
		targetSecrets := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(cfg.Sessions.Namespace),
			informers.WithTransform(controllerutil.SlimForCache),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sessions.TargetSelector().String() }))
		sessionOptions := cfg.Sessions
		var running []func(context.Context)
		if cfg.Events != nil {
			// Each term reads the outbox anew: what a previous leader
			// stored is not stored again.
			events := sessionevents.New(cfg.Events.Sinks, cfg.Events.Outbox, cfg.SessionInformer.Lister(),
				cfg.Sessions.ApprovalTimeout, clock.RealClock{})
			sessionOptions.Events = events
			running = append(running, events.Run)
		}
		sessionController, err := sessions.New(sessionOptions, client, kube, istio, gardenerSessions,
			cfg.SessionInformer, cfg.LockInformer, cfg.CredentialInformer, targetSecrets.Core().V1().Secrets(), recorder, clock.RealClock{})
		if err != nil {
			logger.Error(err, "Building the session controller")
			return
		}
		running = append(running, sessionController.Run)
		if cfg.LockRetention > 0 {
			locks, err := expiredlocks.New(cfg.LockRetention, client, cfg.LockInformer, clock.RealClock{})
			if err != nil {
				logger.Error(err, "Building the expired-locks controller")
				return
			}
			running = append(running, locks.Run)
		}
		factories := []informers.SharedInformerFactory{targetSecrets}
		if g != nil {
			// This Secret informer caches only the Secrets the controller owns.
			kubeconfigSecrets := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(gardenerclusterkubeconfigs.CacheTransform),
				informers.WithTweakListOptions(func(o *metav1.ListOptions) {
					o.LabelSelector = gardenerclusterkubeconfigs.ManagedSecretSelector().String()
				}))
			// Rotations keep to the Gardener client's rate limits.
			kubeconfigController, err := gardenerclusterkubeconfigs.New(cfg.GardenerClusterKubeconfigs.Paced(cfg.Gardener), client, kube, g,
				cfg.KubeconfigInformer, kubeconfigSecrets.Core().V1().Secrets(), cfg.LockInformer, recorder, clock.RealClock{})
			if err != nil {
				logger.Error(err, "Building the kubeconfig controller")
				return
			}
			running = append(running, kubeconfigController.Run)
			factories = append(factories, kubeconfigSecrets)
		}
		for _, f := range factories {
			f.Start(ctx.Done())
		}
		var wg sync.WaitGroup
		for _, r := range running {
			wg.Go(func() { r(ctx) })
		}
		wg.Wait()
	}

	if !cfg.LeaderElect {
		run(ctx)
		return nil
	}
	host, _ := os.Hostname()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaseNamespace, LeaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: host + "_" + uuid.NewString()})
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}
	// A replica that loses the Lease stops its controllers and campaigns again.
	for ctx.Err() == nil {
		campaign(ctx, lock, run)
		logger.Info("Stopped leading")
	}
	return nil
}

// campaign runs the controllers with run while it holds the Lease of lock,
// until ctx ends or the Lease is lost. Once ctx ends it releases the Lease,
// but only after run has returned: a reconcile in flight (a kubeconfig
// fetched from Gardener, not yet written) finishes before the next leader
// starts, which would otherwise do it a second time.
func campaign(ctx context.Context, lock resourcelock.Interface, run func(context.Context)) {
	// The election's own context ends only once the controllers have
	// stopped, or at once while this replica is not leading.
	election, end := context.WithCancel(context.WithoutCancel(ctx))
	defer end()
	var leading atomic.Bool
	stopCampaigning := context.AfterFunc(ctx, func() {
		if !leading.Load() {
			end()
		}
	})
	defer stopCampaigning()
	leaderelection.RunOrDie(election, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lease context.Context) {
				leading.Store(true)
				controllers, stop := context.WithCancel(lease)
				defer context.AfterFunc(ctx, stop)()
				run(controllers)
				end()
			},
			OnStoppedLeading: func() {},
		},
	})
}
