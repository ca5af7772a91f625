// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessions

import (
	"context"
	"errors"
	"sync"
	"time"

	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	istioinformers "istio.io/client-go/pkg/informers/externalversions"
	istiolisters "istio.io/client-go/pkg/listers/security/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/controllers/controllerutil"
)

// policyDiscoveryInterval is how often discovery is asked whether the core
// cluster serves AuthorizationPolicies, so that Istio installed later is
// picked up.
const policyDiscoveryInterval = 30 * time.Second

// errPoliciesNotSynced is a pass's error while the policy cache of a newly
// found Istio API is filling: the pass is retried.
var errPoliciesNotSynced = errors.New("the cache of AuthorizationPolicies has not synced yet")

// policyCache holds the AuthorizationPolicies of the policy namespace once
// the core cluster serves them, so that a pass reads its session's policy
// from memory: a GET on every pass would cost the server's CPU and load
// kube-apiserver in proportion to the sessions created. It caches every
// policy of the namespace, not only the labelled ones, so that a foreign
// policy of a session's name is seen and left alone, as a GET saw it.
type policyCache struct {
	istio     istioclient.Interface
	discovery discovery.ServerResourcesInterface
	namespace string
	// handler is told of every change of a policy.
	handler cache.ResourceEventHandler

	mu     sync.Mutex
	served bool
	lister istiolisters.AuthorizationPolicyNamespaceLister
	synced cache.InformerSynced
}

func newPolicyCache(istio istioclient.Interface, d discovery.ServerResourcesInterface, namespace string, handler cache.ResourceEventHandler) *policyCache {
	return &policyCache{istio: istio, discovery: d, namespace: namespace, handler: handler}
}

// run looks for the API every policyDiscoveryInterval until ctx ends, after
// the check the controller made before it started; the informer, once
// started, ends with ctx.
func (p *policyCache) run(ctx context.Context) {
	_ = wait.PollUntilContextCancel(ctx, policyDiscoveryInterval, false, func(ctx context.Context) (bool, error) {
		p.check(ctx)
		return false, nil
	})
}

// check asks discovery whether AuthorizationPolicies are served and starts
// the informer the first time they are.
func (p *policyCache) check(ctx context.Context) {
	resources, err := p.discovery.ServerResourcesForGroupVersion(istiosecurityv1.SchemeGroupVersion.String())
	served := false
	for _, r := range resourcesOrNone(resources, err) {
		if r.Name == "authorizationpolicies" {
			served = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if served != p.served {
		klog.FromContext(ctx).Info("AuthorizationPolicies served by the core cluster", "served", served)
	}
	p.served = served
	if !served || p.lister != nil {
		return
	}
	factory := istioinformers.NewSharedInformerFactoryWithOptions(p.istio, 0, istioinformers.WithNamespace(p.namespace),
		istioinformers.WithTransform(controllerutil.SlimForCache))
	informer := factory.Security().V1().AuthorizationPolicies()
	if _, err := informer.Informer().AddEventHandler(p.handler); err != nil {
		klog.FromContext(ctx).Error(err, "Watching AuthorizationPolicies")
		return
	}
	p.lister = informer.Lister().AuthorizationPolicies(p.namespace)
	p.synced = informer.Informer().HasSynced
	factory.Start(ctx.Done())
}

// hasSynced is true once the cache is filled, or when there is nothing to
// cache.
func (p *policyCache) hasSynced() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced == nil || p.synced()
}

// get returns the policy of the given name, nil when there is none; served
// is false when the core cluster does not serve AuthorizationPolicies.
func (p *policyCache) get(name string) (policy *istiosecurityv1.AuthorizationPolicy, served bool, err error) {
	p.mu.Lock()
	served, lister, synced := p.served, p.lister, p.synced
	p.mu.Unlock()
	switch {
	case !served:
		return nil, false, nil
	case lister == nil || !synced():
		return nil, true, errPoliciesNotSynced
	}
	policy, err = lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, true, nil
	}
	return policy, true, err
}

func resourcesOrNone(l *metav1.APIResourceList, err error) []metav1.APIResource {
	if err != nil || l == nil {
		return nil
	}
	return l.APIResources
}
