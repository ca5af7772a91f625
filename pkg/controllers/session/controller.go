package session

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	istioapplyv1 "istio.io/client-go/pkg/applyconfiguration/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
	"github.com/clustergate/clustergate/pkg/credentials"
	"github.com/clustergate/clustergate/pkg/gardener"
	applyv1alpha1 "github.com/clustergate/clustergate/pkg/generated/applyconfiguration/clustergate/v1alpha1"
	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	informers "github.com/clustergate/clustergate/pkg/generated/informers/externalversions/clustergate/v1alpha1"
	listers "github.com/clustergate/clustergate/pkg/generated/listers/clustergate/v1alpha1"
)

// FieldManager is the field manager of the controller's writes.
const FieldManager = "clustergate-session-controller"

// Options configure a Controller.
type Options struct {
	Config
	// Namespace is the server's own namespace: credentials Secrets and the
	// kubeconfig Secrets of cluster targets live there.
	Namespace string
	// Policy configures the sessions' AuthorizationPolicies.
	Policy PolicyConfig
	// Workers is the number of sessions handled in parallel.
	Workers int
}

// Controller runs the lifecycle of Sessions.
type Controller struct {
	opts     Options
	client   versioned.Interface
	kube     kubernetes.Interface
	istio    istioclient.Interface
	gardener gardener.Requester
	clock    clock.WithTicker
	recorder events.EventRecorder

	sessions listers.SessionLister
	secrets  corelisters.SecretLister
	// targets are the Secrets marked as cluster targets.
	targets   corelisters.SecretLister
	hasSynced []cache.InformerSynced
	queue     *controllerutil.Queue
	// mintFailures are the failed attempts to mint credentials from Gardener.
	mintFailures *controllerutil.Failures
	// removeHandlers removes the controller's event handlers from the
	// shared informers.
	removeHandlers func()
	// policies caches the sessions' AuthorizationPolicies; nil when the
	// server manages none.
	policies *policyCache
}

// New returns a controller over the given informers. The Secret informers
// must cover only the server's namespace: secrets restricted with
// credentials.Selector, targets with TargetSelector. g may be nil when no
// Gardener project is configured.
func New(opts Options, client versioned.Interface, kube kubernetes.Interface, istio istioclient.Interface, g gardener.Requester,
	sessions informers.SessionInformer, secrets, targets coreinformers.SecretInformer, recorder events.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		opts: opts, client: client, kube: kube, istio: istio, gardener: g, clock: clk, recorder: recorder,
		sessions:     sessions.Lister(),
		secrets:      secrets.Lister(),
		targets:      targets.Lister(),
		hasSynced:    []cache.InformerSynced{sessions.Informer().HasSynced, secrets.Informer().HasSynced, targets.Informer().HasSynced},
		mintFailures: controllerutil.NewFailures(),
	}
	c.queue = controllerutil.NewQueue("session-controller", clk, 500*time.Millisecond, time.Minute, c.sync)
	remove, err := controllerutil.AddHandlers(
		controllerutil.InformerHandler{Informer: sessions.Informer(), Handler: c.queue.EventHandler(controllerutil.ObjectKey)},
		controllerutil.InformerHandler{Informer: secrets.Informer(), Handler: c.queue.EventHandler(func(obj any) (types.NamespacedName, bool) {
			s, ok := obj.(*corev1.Secret)
			if !ok {
				return types.NamespacedName{}, false
			}
			return types.NamespacedName{Namespace: s.Labels[credentials.LabelSessionNamespace], Name: s.Labels[credentials.LabelSessionName]}, true
		})},
		// A target that appears, changes or goes queues the sessions that
		// name it: they wait for it without a timer.
		controllerutil.InformerHandler{Informer: targets.Informer(), Handler: c.queue.KeysEventHandler(c.sessionsNaming)})
	if err != nil {
		return nil, err
	}
	c.removeHandlers = remove
	if opts.Policy.Namespace != "" && istio != nil {
		// A policy's changes queue its session, so that a pass after an
		// apply or delete sees the result, and a policy deleted by hand is
		// put back at once.
		c.policies = newPolicyCache(istio, kube.Discovery(), opts.Policy.Namespace, c.queue.EventHandler(func(obj any) (types.NamespacedName, bool) {
			p, ok := obj.(metav1.Object)
			if !ok {
				return types.NamespacedName{}, false
			}
			return credentials.SessionOf(p)
		}))
	}
	return c, nil
}

// Run handles sessions until ctx ends, then lets go of the informers.
func (c *Controller) Run(ctx context.Context) {
	defer c.removeHandlers()
	hasSynced := c.hasSynced
	if c.policies != nil {
		c.policies.check(ctx)
		go c.policies.run(ctx)
		hasSynced = append(slices.Clone(hasSynced), c.policies.hasSynced)
	}
	c.queue.Run(ctx, c.opts.Workers, hasSynced...)
}

// sync observes one session and performs its next action. Expiry is a
// timer on the queue (RequeueAfter), not a resync; writes that come back as
// no event (on targets) are followed by another pass at once.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) (controllerutil.Result, error) {
	s, err := c.sessions.Sessions(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controllerutil.Result{}, nil
	}
	if err != nil {
		return controllerutil.Result{}, err
	}
	o, target, err := c.observe(ctx, s)
	if err != nil {
		return controllerutil.Result{}, err
	}
	a := NextAction(o, c.opts.Config)
	klog.FromContext(ctx).V(4).Info("Next action", "session", key, "action", a.Type)
	if err := c.perform(ctx, o, target, a); err != nil {
		return controllerutil.Result{}, err
	}
	record(o, a)
	_, mintFailed := c.mintFailures.Get(s.UID)
	return controllerutil.Result{RequeueAfter: a.RequeueAfter, Again: !comesBackAsEvent(a.Type, mintFailed)}, nil
}

// comesBackAsEvent tells whether an action's outcome reaches the queue as an
// event of a cache (Sessions, credentials Secrets, policies). The others
// (writes on a target, a mint that failed and wrote nothing) are followed
// by another pass at once. A pass right after a cached write would see the
// cache from before it and write again: a conflict or AlreadyExists, and
// for a mint a second request to Gardener.
func comesBackAsEvent(t ActionType, mintFailed bool) bool {
	switch t {
	case MintShootCredentials:
		return !mintFailed
	case None, UpdateStatus, AddFinalizer, RemoveFinalizer, DeleteSession,
		CreatePrivateKey, WriteCertificate, DeleteCredentials, ApplyPolicy, DeletePolicy:
		return true
	}
	return false
}

// target is a cluster target as the server reaches it.
type target struct {
	kube   kubernetes.Interface
	server string
	ca     []byte
}

// observe gathers a session's credentials, CSR and policy. The target is
// contacted only while credentials are being minted, renewed or cleaned up.
func (c *Controller) observe(ctx context.Context, s *v1alpha1.Session) (Observed, *target, error) {
	o := Observed{Session: s, Now: c.clock.Now()}
	secret, err := c.secrets.Secrets(c.opts.Namespace).Get(credentials.SecretName(s.UID))
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, nil, err
	default:
		o.Credentials = secret
	}

	var t *target
	minting := o.Credentials == nil || len(o.Credentials.Data[credentials.KeyKubeconfig]) == 0
	if s.Spec.Target.Shoot != nil {
		if c.gardener == nil && minting {
			o.Target = &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: "the server has no Gardener project (--gardener-project)"}
		}
		// Also while credentials are renewed for an extension.
		if f, ok := c.mintFailures.Get(s.UID); ok {
			o.MintFailure = &f
		}
	}
	if s.Spec.Target.Cluster != nil && (minting || renewalDue(o) || s.DeletionTimestamp != nil) {
		t, o.Target = c.reachTarget(ctx, s)
		if t != nil {
			csr, err := t.kube.CertificatesV1().CertificateSigningRequests().Get(ctx, credentials.CSRName(s.UID), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				o.Target = targetProblem(err)
			default:
				o.CSR = csr
			}
		}
		if o.Target != nil && s.DeletionTimestamp != nil {
			// A target that is gone or unreachable cannot hold up the
			// deletion: its CSR expires there on its own.
			c.recorder.Eventf(s, nil, corev1.EventTypeWarning, o.Target.Reason, "Cleanup", "CSR %s left on the target: %s", credentials.CSRName(s.UID), o.Target.Message)
		}
	}

	o.Policy, err = c.observePolicy(s)
	return o, t, err
}

// TargetSelector selects the Secrets marked as cluster targets: the only
// ones the controller caches of those a session may name.
func TargetSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{credentials.LabelClusterTarget: "true"})
}

// sessionsNaming returns the sessions whose cluster target is the given
// Secret. Targets change seldom, so all sessions are looked through rather
// than indexed.
func (c *Controller) sessionsNaming(obj any) []types.NamespacedName {
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Namespace != c.opts.Namespace {
		return nil
	}
	sessions, err := c.sessions.List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []types.NamespacedName
	for _, s := range sessions {
		if t := s.Spec.Target.Cluster; t != nil && t.KubeconfigSecretRef.Name == secret.Name {
			keys = append(keys, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return keys
}

func (c *Controller) reachTarget(ctx context.Context, s *v1alpha1.Session) (*target, *TargetProblem) {
	ref := s.Spec.Target.Cluster.KubeconfigSecretRef.Name
	secret, err := c.targets.Secrets(c.opts.Namespace).Get(ref)
	if apierrors.IsNotFound(err) {
		return nil, c.unmarkedTarget(ctx, s, ref)
	}
	if err != nil {
		return nil, targetProblem(err)
	}
	if !isClusterTarget(secret) {
		return nil, notMarked(c.opts.Namespace, ref)
	}
	kubeconfig := secret.Data["kubeconfig"]
	if len(kubeconfig) == 0 {
		kubeconfig = secret.Data["value"]
	}
	server, ca, err := credentials.TargetCluster(kubeconfig)
	if err != nil {
		return nil, &TargetProblem{Reason: v1alpha1.SessionReasonTargetInsecure, Message: fmt.Sprintf("kubeconfig Secret %s: %v", ref, err)}
	}
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: err.Error()}
	}
	restConfig.Timeout = 10 * time.Second
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: err.Error()}
	}
	return &target{kube: kube, server: server, ca: ca}, nil
}

// unmarkedTarget says why a session's target Secret is not among the
// marked ones: missing, or not marked. The core cluster is asked only while
// the session does not already say which: the answer changes only when the
// Secret is marked, and that is an event of the target cache. So a session
// waiting for its target costs nothing, however many there are (retried
// every 30 s with a GET each, 10,000 waiting sessions asked for 333 GETs a
// second, three times the controller's client limit).
func (c *Controller) unmarkedTarget(ctx context.Context, s *v1alpha1.Session, ref string) *TargetProblem {
	if have := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionCredentialsReady); have != nil &&
		have.Status == metav1.ConditionFalse && isUnmarked(have.Reason) {
		return &TargetProblem{Reason: have.Reason, Message: have.Message}
	}
	_, err := c.kube.CoreV1().Secrets(c.opts.Namespace).Get(ctx, ref, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotFound, Message: fmt.Sprintf(
			"kubeconfig Secret %s/%s not found; a cluster target is a Secret there labelled %s=true", c.opts.Namespace, ref, credentials.LabelClusterTarget)}
	case err != nil:
		return targetProblem(err)
	}
	return notMarked(c.opts.Namespace, ref)
}

// isUnmarked tells whether a target problem lasts until a Secret is marked
// as a cluster target.
func isUnmarked(reason string) bool {
	return reason == v1alpha1.SessionReasonTargetNotFound || reason == v1alpha1.SessionReasonTargetNotMarked
}

func notMarked(namespace, ref string) *TargetProblem {
	return &TargetProblem{Reason: v1alpha1.SessionReasonTargetNotMarked, Message: fmt.Sprintf(
		"Secret %s/%s is not a cluster target: only a Secret labelled %s=true that holds no credentials the server wrote is one",
		namespace, ref, credentials.LabelClusterTarget)}
}

func targetProblem(err error) *TargetProblem {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &TargetProblem{Reason: v1alpha1.SessionReasonTargetForbidden, Message: err.Error()}
	}
	return &TargetProblem{Reason: v1alpha1.SessionReasonTargetUnreachable, Message: err.Error()}
}

func (c *Controller) observePolicy(s *v1alpha1.Session) (PolicyState, error) {
	if c.policies == nil {
		return PolicyState{Disabled: true}, nil
	}
	p, served, err := c.policies.get(PolicyName(s))
	switch {
	case err != nil:
		return PolicyState{}, err
	case !served:
		return PolicyState{APIAbsent: true}, nil
	}
	return observePolicy(p, s, c.opts.Policy), nil
}

func (c *Controller) perform(ctx context.Context, o Observed, t *target, a Action) error {
	s := o.Session
	sessions := c.client.ClustergateV1alpha1().Sessions(s.Namespace)
	secrets := c.kube.CoreV1().Secrets(c.opts.Namespace)
	update := metav1.UpdateOptions{FieldManager: FieldManager}
	switch a.Type {
	case None:
		return nil
	case DeleteSession:
		uid := s.UID
		err := sessions.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil {
			c.recorder.Eventf(s, nil, corev1.EventTypeNormal, a.Reason, "Delete", "%s%s", a.Message, forReason(s))
		}
		return controllerutil.IgnoreNotFound(err)
	case AddFinalizer:
		updated := s.DeepCopy()
		updated.Finalizers = append(updated.Finalizers, v1alpha1.SessionFinalizer)
		_, err := sessions.Update(ctx, updated, update)
		return err
	case RemoveFinalizer:
		c.mintFailures.Forget(s.UID)
		updated := s.DeepCopy()
		updated.Finalizers = slices.DeleteFunc(slices.Clone(updated.Finalizers), func(f string) bool { return f == v1alpha1.SessionFinalizer })
		_, err := sessions.Update(ctx, updated, update)
		return controllerutil.IgnoreNotFound(err)
	case MintShootCredentials:
		return c.mintShootCredentials(ctx, o)
	case CreatePrivateKey:
		key, err := credentials.NewPrivateKey()
		if err != nil {
			return err
		}
		if o.Credentials == nil {
			_, err = secrets.Create(ctx, credentials.NewSecret(c.opts.Namespace, s, map[string][]byte{credentials.KeyPrivateKey: key}), metav1.CreateOptions{FieldManager: FieldManager})
			return err
		}
		// A renewal's key joins the kubeconfig in use.
		updated := o.Credentials.DeepCopy()
		if updated.Data == nil {
			updated.Data = map[string][]byte{}
		}
		updated.Data[credentials.KeyPrivateKey] = key
		_, err = secrets.Update(ctx, updated, update)
		return err
	case CreateCSR:
		return c.createCSR(ctx, o, t)
	case ApproveCSR:
		csr := o.CSR.DeepCopy()
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "ClustergateSession",
			Message: fmt.Sprintf("approved by clustergate for session %s/%s of %s", s.Namespace, s.Name, s.Spec.Owner.Username),
		})
		_, err := t.kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, update)
		return err
	case WriteCertificate:
		kubeconfig, err := credentials.ClientKubeconfig(t.server, t.ca, o.CSR.Status.Certificate, o.Credentials.Data[credentials.KeyPrivateKey])
		if err != nil {
			return err
		}
		renewed := len(o.Credentials.Data[credentials.KeyKubeconfig]) > 0
		_, notAfter := credentials.Validity(kubeconfig)
		updated := o.Credentials.DeepCopy()
		updated.Data = map[string][]byte{credentials.KeyKubeconfig: kubeconfig}
		_, err = secrets.Update(ctx, updated, update)
		if err == nil {
			issued := pick(renewed, "renewed", "issued")
			c.recorder.Eventf(s, nil, corev1.EventTypeNormal, v1alpha1.SessionReasonMinted, "MintCredentials", "Client certificate %s by %s, valid until %s%s",
				issued, o.CSR.Spec.SignerName, notAfter.UTC().Format(time.RFC3339), forReason(s))
		}
		return err
	case ApplyPolicy:
		policy := istioapplyv1.AuthorizationPolicy(PolicyName(s), c.opts.Policy.Namespace).
			WithLabels(credentials.Labels(s.Namespace, s.Name)).WithSpec(*DesiredPolicy(s, c.opts.Policy))
		_, err := c.istio.SecurityV1().AuthorizationPolicies(c.opts.Policy.Namespace).Apply(ctx, policy,
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		return err
	case UpdateStatus:
		err := c.applyStatus(ctx, s, a)
		if err == nil {
			c.recordApproval(s, a.Conditions)
		}
		return err
	case DeleteCredentials:
		return controllerutil.IgnoreNotFound(secrets.Delete(ctx, o.Credentials.Name, metav1.DeleteOptions{}))
	case DeleteCSR:
		return controllerutil.IgnoreNotFound(t.kube.CertificatesV1().CertificateSigningRequests().Delete(ctx, o.CSR.Name, metav1.DeleteOptions{}))
	case DeletePolicy:
		return controllerutil.IgnoreNotFound(c.istio.SecurityV1().AuthorizationPolicies(c.opts.Policy.Namespace).Delete(ctx, PolicyName(s), metav1.DeleteOptions{}))
	}
	return fmt.Errorf("unknown action %q", a.Type)
}

// mintShootCredentials asks Gardener for an admin or viewer kubeconfig that
// lasts as long as the session (at least Gardener's minimum) and stores it.
// A failure is remembered for the next pass, which reports it and decides
// when to try again.
func (c *Controller) mintShootCredentials(ctx context.Context, o Observed) error {
	s := o.Session
	level := gardener.Viewer
	if s.Spec.AccessLevel.Group == "admin" {
		level = gardener.Admin
	}
	remaining := s.Spec.TTL.Duration
	if s.Status.ExpiresAt != nil {
		remaining = s.Status.ExpiresAt.Sub(o.Now)
	}
	failed := func(reason, msg string) error {
		c.mintFailures.Record(s.UID, reason, msg, c.clock.Now())
		c.recorder.Eventf(s, nil, corev1.EventTypeWarning, reason, "MintCredentials", "%s", msg)
		return nil
	}
	kc, err := c.gardener.RequestKubeconfig(ctx, s.Spec.Target.Shoot.Name, level, remaining)
	if err != nil {
		reason := map[gardener.Reason]string{gardener.ShootNotFound: v1alpha1.SessionReasonTargetNotFound, gardener.Forbidden: v1alpha1.SessionReasonTargetForbidden}[gardener.ReasonOf(err)]
		if reason == "" {
			reason = v1alpha1.SessionReasonTargetUnreachable
		}
		return failed(reason, err.Error())
	}
	if _, _, err := credentials.TargetCluster(kc.Data); err != nil {
		return failed(v1alpha1.SessionReasonTargetInsecure, "Gardener's kubeconfig: "+err.Error())
	}
	secret := credentials.NewSecret(c.opts.Namespace, s, map[string][]byte{credentials.KeyKubeconfig: kc.Data})
	if o.Credentials != nil {
		secret.ResourceVersion = o.Credentials.ResourceVersion
		_, err = c.kube.CoreV1().Secrets(c.opts.Namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: FieldManager})
	} else {
		_, err = c.kube.CoreV1().Secrets(c.opts.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: FieldManager})
	}
	if err == nil {
		c.mintFailures.Forget(s.UID)
		c.recorder.Eventf(s, nil, corev1.EventTypeNormal, v1alpha1.SessionReasonMinted, "MintCredentials", "%s kubeconfig of shoot %s issued by Gardener%s", level, s.Spec.Target.Shoot.Name, forReason(s))
	}
	return err
}

func (c *Controller) createCSR(ctx context.Context, o Observed, t *target) error {
	s := o.Session
	request, err := credentials.CertificateRequest(o.Credentials.Data[credentials.KeyPrivateKey], CommonName(s), s.Spec.AccessLevel.Group)
	if err != nil {
		return err
	}
	// As long as the session has left (a renewal's certificate lasts until
	// its possibly extended expiry), at least the API's minimum.
	remaining := s.Spec.TTL.Duration
	if s.Status.ExpiresAt != nil {
		remaining = s.Status.ExpiresAt.Sub(o.Now)
	}
	seconds := int32(math.Ceil(max(remaining, gardener.MinExpiration).Seconds()))
	_, err = t.kube.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: credentials.CSRName(s.UID), Labels: credentials.Labels(s.Namespace, s.Name)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        s.Spec.Target.Cluster.SignerName,
			ExpirationSeconds: &seconds,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// applyStatus writes conditions and backend URL with server-side apply.
func (c *Controller) applyStatus(ctx context.Context, s *v1alpha1.Session, a Action) error {
	status := applyv1alpha1.SessionStatus().WithObservedGeneration(s.Generation).
		WithConditions(controllerutil.ApplyConditions(s.Status.Conditions, a.Conditions...)...)
	if a.BackendURL != "" {
		status.WithBackendURL(a.BackendURL)
	}
	_, err := c.client.ClustergateV1alpha1().Sessions(s.Namespace).ApplyStatus(ctx,
		applyv1alpha1.Session(s.Name, s.Namespace).WithStatus(status), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}
