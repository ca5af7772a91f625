// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/controllers/gardenerclusterkubeconfigs"
	"github.com/clustergate/clustergate/pkg/controllers/sessions"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/dataplane"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	clustergateinformers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions"
	"github.com/clustergate/clustergate/pkg/proxy"
	"github.com/clustergate/clustergate/pkg/recording"
	sessionstorage "github.com/clustergate/clustergate/pkg/registry/session/storage"
)

// parts are what the server runs besides its storage: the connection tracker of this
// replica's proxied requests, the cache of the sessions' credentials it
// reaches targets with, the caches of its own objects, and, once it
// serves, the object metrics and the controllers.
type parts struct {
	tracker *proxy.Tracker
	// client reaches the server's own API; informers cache its objects,
	// one informer per kind, started once it serves.
	client    versioned.Interface
	informers clustergateinformers.SharedInformerFactory
	// recorder records sessions (nil when off); recordings reads them back.
	recorder   *recording.Recorder
	recordings recording.Reader
	// credentialInformers and credentials are nil when standalone.
	credentialInformers informers.SharedInformerFactory
	credentials         *credentials.Source
	// events records the sessions' events of this replica; nil when
	// standalone.
	events events.EventBroadcaster
	// eventDelivery stores and delivers session events (nil without sinks).
	eventDelivery *controllers.EventDelivery
	// targets reads the labels of sessions' targets for approval policies.
	targets targetLabels
}

// sessionEvents records an event of a moderated stream on its Session.
func sessionEvents(recorder events.EventRecorder) func(t proxy.Target, eventType, reason, message string) {
	return func(t proxy.Target, eventType, reason, message string) {
		ref := &corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Session",
			Namespace: t.Namespace, Name: t.Name, UID: t.UID}
		recorder.Eventf(ref, nil, eventType, reason, "Moderate", "%s", message)
	}
}

// newParts builds the parts the storage needs, before server serves.
func (c CompletedConfig) newParts(server *genericapiserver.GenericAPIServer) (*parts, error) {
	extra := c.ExtraConfig
	p := &parts{tracker: proxy.NewTracker(clock.RealClock{}, extra.ProxyLimits), targets: targetLabels{gardener: extra.gardener}}
	var err error
	// Protobuf: the caches decode every object and every change of it,
	// and decoding JSON allocates far more.
	if p.client, err = versioned.NewForConfig(controllerutil.Protobuf(server.LoopbackClientConfig)); err != nil {
		return nil, err
	}
	// sessions/proxy reads the session of every request from its informer.
	p.informers = clustergateinformers.NewSharedInformerFactoryWithOptions(p.client, 0,
		clustergateinformers.WithTransform(controllerutil.SlimForCache))
	if p.recorder, p.recordings, err = extra.Recording.newRecording(); err != nil {
		return nil, err
	}
	if p.recorder != nil {
		p.tracker.RecordWith(p.recorder)
	}
	p.tracker.EnforceAccess(extra.SessionAccess)
	p.tracker.Moderate(proxy.ModerationConfig{Wait: extra.ModeratorWait})
	if extra.Standalone {
		return p, nil
	}
	kube, err := kubernetes.NewForConfig(controllerutil.Protobuf(extra.withClientLimits(c.core)))
	if err != nil {
		return nil, fmt.Errorf("a client of the core cluster: %w", err)
	}
	// Every replica tells of the moderated streams it relays in their
	// sessions' events: who moderated, and what ended them.
	p.events = events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	p.tracker.Moderate(proxy.ModerationConfig{Wait: extra.ModeratorWait, Events: sessionEvents(p.events.NewRecorder(scheme.Scheme, "clustergate"))})
	// Only the credentials Secrets of the server's namespace: the cache
	// must not hold every Secret of a control plane.
	namespace := extra.Namespace
	p.targets.secrets = kube.CoreV1().Secrets(namespace)
	p.credentialInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace),
		informers.WithTransform(controllerutil.SlimForCache),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = credentials.Selector().String() }))
	p.credentials = credentials.NewSource(p.credentialInformers.Core().V1().Secrets().Lister().Secrets(namespace))
	return p, nil
}

// proxyConfig is what sessions/proxy and sessions/kubeconfig need.
func (p *parts) proxyConfig(kc sessionstorage.KubeconfigOptions) sessionstorage.ProxyConfig {
	cfg := sessionstorage.ProxyConfig{Tracker: p.tracker, Kubeconfig: kc, Sessions: p.informers.Clustergate().V1alpha1().Sessions()}
	if p.recorder != nil {
		cfg.Recordings = &p.recordings
	}
	if p.credentials != nil {
		cfg.Backends = p.credentials
	}
	return cfg
}

// start arranges, once the server serves, one cache per kind shared by the
// proxy and the object metrics (every replica) and the controllers (the
// leader); and that every replica ends its own proxied requests when their
// sessions end.
func (p *parts) start(server *genericapiserver.GenericAPIServer, extra *ExtraConfig, core *restclient.Config, sessionProxy dataplane.Opener) error {
	// Every replica records the last use of the sessions it serves, at
	// most once an interval per session across the replicas.
	p.tracker.RecordLastUse(extra.SessionLimits.LastUseInterval(), lastUseWriter(p.client))
	factory := p.informers
	sessionInformer := factory.Clustergate().V1alpha1().Sessions()
	kubeconfigInformer := factory.Clustergate().V1alpha1().GardenerClusterKubeconfigs()
	locks := factory.Clustergate().V1alpha1().SessionLocks()
	registerObjectMetrics(
		sessions.NewCollector(sessionInformer.Lister(), sessionInformer.Informer().HasSynced, clock.RealClock{}),
		gardenerclusterkubeconfigs.NewCollector(kubeconfigInformer.Lister(), kubeconfigInformer.Informer().HasSynced, extra.Controllers.GardenerClusterKubeconfigs.Config, clock.RealClock{}))

	startEvents := p.sessionEventsOfEveryReplica(extra, sessionInformer.Lister())
	server.AddPostStartHookOrDie("start-session-proxy", func(hookCtx genericapiserver.PostStartHookContext) error {
		forget := func(types.UID) {}
		if p.credentials != nil {
			forget = p.credentials.Forget
			p.credentialInformers.Start(hookCtx.Done())
		}
		if err := p.tracker.EndWithSessions(sessionInformer.Informer(), forget); err != nil {
			return err
		}
		// Every replica cuts the sessions a SessionLock holds itself, from
		// its own informer, without waiting for the leader.
		if err := p.tracker.EndWithLocks(locks.Informer(), sessionInformer.Informer().GetStore()); err != nil {
			return err
		}
		if p.recorder != nil {
			go p.recorder.Run(hookCtx)
		}
		startEvents(hookCtx)
		if p.events != nil {
			p.events.StartRecordingToSink(hookCtx.Done())
		}
		factory.Start(hookCtx.Done())
		return nil
	})
	// Once --shutdown-delay-duration is over, the server stops taking
	// requests and waits for those open to finish, up to its request
	// timeout: proxied streams end then, with a Status saying that the
	// replica stops, and their clients reconnect to another one. (The
	// controllers' hook must not wait for this.)
	server.AddPreShutdownHookOrDie("end-proxied-streams", func() error {
		time.AfterFunc(server.ShutdownDelayDuration, p.tracker.Stop)
		return nil
	})
	if extra.DataPlane.Address != "" {
		// The data plane presents the serving certificate unless it has one
		// of its own, which is reloaded when its files change.
		cert := server.SecureServingInfo.Cert
		var files *dynamiccertificates.DynamicCertKeyPairContent
		if extra.DataPlane.TLSCertFile != "" {
			var err error
			if files, err = dynamiccertificates.NewDynamicServingContentFromFiles("data-plane", extra.DataPlane.TLSCertFile, extra.DataPlane.TLSKeyFile); err != nil {
				return fmt.Errorf("the data plane's certificate: %w", err)
			}
			cert = files
		}
		server.AddPostStartHookOrDie("start-data-plane", func(hookCtx genericapiserver.PostStartHookContext) error {
			if files != nil {
				go files.Run(hookCtx, 1)
			}
			auth, err := dataplane.LoadAuthenticator(hookCtx, extra.DataPlane.AuthenticationConfigFile, extra.DataPlane.SharedGardenIdentities)
			if err != nil {
				return err
			}
			_, err = dataplane.Listen(hookCtx, extra.DataPlane, server.SecureServingInfo, cert, auth, sessionProxy)
			return err
		})
	}
	if extra.Standalone {
		return nil
	}
	// Controllers read and write through the server's own API, so they
	// start once it serves.
	credentialSecrets := p.credentialInformers.Core().V1().Secrets()
	// The controllers stop, and release the Lease, as soon as the replica
	// is told to stop, not when it stops serving after
	// --shutdown-delay-duration and the drain: another replica takes over
	// within a retry period while this one still serves requests.
	controllersCtx, stopControllers := context.WithCancel(context.Background())
	controllersStopped := make(chan struct{})
	server.AddPreShutdownHookOrDie("stop-clustergate-controllers", func() error {
		stopControllers()
		select {
		case <-controllersStopped:
		case <-time.After(controllersStopTimeout):
		}
		return nil
	})
	// The session controller mints the groups and binds the roles of the
	// access levels the API admits.
	controllerOptions := extra.Controllers
	controllerOptions.Sessions.Access = extra.SessionAccess
	server.AddPostStartHookOrDie("start-clustergate-controllers", func(hookCtx genericapiserver.PostStartHookContext) error {
		ctx, stop := context.WithCancel(klog.NewContext(controllersCtx, klog.FromContext(hookCtx)))
		context.AfterFunc(hookCtx, stop)
		go func() {
			defer close(controllersStopped)
			defer stop()
			err := controllers.Run(ctx, controllers.Config{
				Options:            controllerOptions,
				GardenerClient:     extra.gardener,
				Loopback:           extra.withClientLimits(hookCtx.LoopbackClientConfig),
				Core:               extra.withClientLimits(core),
				SessionInformer:    sessionInformer,
				KubeconfigInformer: kubeconfigInformer,
				LockInformer:       locks,
				CredentialInformer: credentialSecrets,
				Events:             p.eventDelivery,
			})
			if err != nil {
				klog.ErrorS(err, "Controllers stopped")
			}
		}()
		return nil
	})
	return nil
}

// controllersStopTimeout bounds how long a stopping replica waits for its
// controllers to end and release the Lease before it goes on stopping.
const controllersStopTimeout = 5 * time.Second

// registerObjectMetrics serves the metrics of what Sessions and
// GardenerClusterKubeconfigs are like now, computed at each scrape from this
// replica's own caches, leader or not.
func registerObjectMetrics(collectors ...metrics.StableCollector) {
	for _, c := range collectors {
		// A second server in one process, as in tests, keeps the first's.
		if err := legacyregistry.CustomRegister(c); err != nil {
			klog.ErrorS(err, "Object metrics not registered")
		}
	}
}
