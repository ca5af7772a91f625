// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command cert-manager runs cert-manager's own controllers, built from
// github.com/cert-manager/cert-manager at the version pinned in go.mod, for
// the install test and the documented certificates of artifacts/components/
// cert-manager:
//
//	cert-manager controller --kubeconfig=<file> [--namespace=<ns>]
//	cert-manager cainjector --kubeconfig=<file>
//
// Why not cert-manager's cmd/controller and cmd/cainjector: they are Go
// modules of their own (github.com/cert-manager/cert-manager/controller-binary
// and .../cainjector-binary) whose paths do not match their directories and
// which replace the root module with ../../, so the module proxy cannot
// serve them, and the root module's zip leaves cmd/ out. The controllers
// themselves live in the root module (pkg/controller/...: each registers
// itself with controller.Register) and the CA injector's reconcilers too
// (pkg/controller/cainjector); this command is the thin main around them
// that cmd/controller/app and cmd/cainjector/app are upstream, with the
// flags the install needs and nothing else (no ACME solver pods, no
// Gateway API shim, no webhook: the CRDs' OpenAPI schemas validate).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	// The controllers a CA issuer chain needs register themselves.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// The issuer kinds the issuers controller checks register themselves.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cert-manager controller|cainjector [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "controller":
		err = runController(ctx, os.Args[2:])
	case "cainjector":
		err = runCAInjector(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown component %q: want controller or cainjector", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

// runController runs every registered controller until ctx ends.
func runController(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster; empty is the in-cluster configuration")
	namespace := fs.String("namespace", "", "namespace to watch; empty is every namespace (and ClusterIssuers)")
	clusterResourceNamespace := fs.String("cluster-resource-namespace", "cert-manager", "namespace of the Secrets ClusterIssuers name")
	workers := fs.Int("workers", 5, "workers per controller")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logf.Log = klog.Background()
	ctx = logf.NewContext(ctx, logf.Log, "controller")

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		Namespace:          *namespace,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: *clusterResourceNamespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	known := controllerpkg.Known()
	names := make([]string, 0, len(known))
	for name := range known {
		if *namespace != "" && name == "clusterissuers" {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var controllers []controllerpkg.Interface
	for _, name := range names {
		c, err := known[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		controllers = append(controllers, c)
	}
	built, err := factory.Build()
	if err != nil {
		return err
	}
	klog.InfoS("starting controllers", "controllers", strings.Join(names, ","))
	built.SharedInformerFactory.Start(ctx.Done())
	built.KubeSharedInformerFactory.Start(ctx.Done())
	built.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	errs := make(chan error, len(controllers))
	for i, c := range controllers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(*workers, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", names[i], err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runCAInjector fills in spec.caBundle of APIServices (and webhook
// configurations and CRD conversions) that carry
// cert-manager.io/inject-ca-from, until ctx ends.
func runCAInjector(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cainjector", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster; empty is the in-cluster configuration")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig != "" {
		if err := os.Setenv("KUBECONFIG", *kubeconfig); err != nil {
			return err
		}
	}
	var log logr.Logger = klog.Background()
	ctrl.SetLogger(log)
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// The injector's server-side applies take their field manager from
	// the user agent, as upstream's cainjector sets it.
	cfg = util.RestConfigWithUserAgent(cfg, "cainjector")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{},
	})
	if err != nil {
		return err
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		// The keys are the injectables' resource names in cainjector.
		EnabledReconcilersFor: map[string]bool{
			"mutatingwebhookconfiguration":   true,
			"validatingwebhookconfiguration": true,
			"apiservice":                     true,
			"customresourcedefinition":       true,
		},
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
