// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command process-kubelet is a node, built on virtual-kubelet, that runs
// the pods bound to it as host processes: each pod gets a network
// namespace with an address of a private /24 on a bridge, its images are
// pulled and unpacked into a rootfs per container, and each container's
// entrypoint runs chrooted there, in a mount namespace of its own with the
// pod's volumes bind-mounted, as the image's or the pod's user. It serves
// the kubelet API (logs, exec, port-forward) over TLS to clients with a
// certificate of its client CA, and provisions hostPath volumes for claims
// of its StorageClass. It needs root. On SIGTERM it stops every pod with
// its grace period and removes every namespace and link it created.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// config is the node's flags.
type config struct {
	kubeconfig, nodeName, rootDir string
	listen, internalIP            string
	certFile, keyFile, clientCA   string
	podCIDR, prefix, storageClass string
	apiserverForward              string
	// shutdownGrace caps each pod's grace period when the node stops, as
	// the kubelet's shutdownGracePeriod does, so that the node is gone
	// before whoever stops it loses patience.
	shutdownGrace time.Duration
	verbose       bool
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == initCommand {
		runInit(os.Args[2])
	}
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster the node joins")
	flag.StringVar(&cfg.nodeName, "node-name", "process-node", "name of the Node")
	flag.StringVar(&cfg.rootDir, "root-dir", "/var/lib/process-kubelet", "directory of images, pods and volumes")
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:10250", "address of the kubelet API")
	flag.StringVar(&cfg.internalIP, "internal-ip", "", "the Node's InternalIP (default: the host of --listen)")
	flag.StringVar(&cfg.certFile, "tls-cert-file", "", "serving certificate of the kubelet API")
	flag.StringVar(&cfg.keyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	flag.StringVar(&cfg.clientCA, "client-ca-file", "", "CA of the kube-apiserver's kubelet client certificate")
	flag.StringVar(&cfg.podCIDR, "pod-cidr", "10.244.0.0/24", "IPv4 /24 of pod addresses; .1 is the gateway")
	flag.StringVar(&cfg.prefix, "network-prefix", "pkl", "prefix (1 to 6 characters) of every namespace and link the node creates; links with it are removed at start")
	flag.StringVar(&cfg.storageClass, "storage-class", "process-local", "default StorageClass whose claims the node provisions; empty: none")
	flag.StringVar(&cfg.apiserverForward, "apiserver-forward", "", "host:port of the kube-apiserver to forward from the gateway address, set as KUBERNETES_SERVICE_HOST/PORT in containers")
	flag.DurationVar(&cfg.shutdownGrace, "shutdown-grace-period", 5*time.Second, "longest grace period of a pod stopped because the node stops")
	flag.BoolVar(&cfg.verbose, "v", false, "log virtual-kubelet's debug messages")
	flag.Parse()
	if err := run(&cfg); err != nil {
		log.Fatal(err)
	}
}

// run joins the cluster and serves pods until SIGTERM or SIGINT.
func run(cfg *config) error {
	level := slog.LevelInfo
	if cfg.verbose {
		level = slog.LevelDebug
	}
	vklog.L = vkslog.FromSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	host, portText, err := net.SplitHostPort(cfg.listen)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return err
	}
	if cfg.internalIP == "" {
		cfg.internalIP = host
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return err
	}
	// client-go's default of 5 requests a second made a pod wait seconds
	// for its Secrets, ConfigMaps and tokens while a few pods started.
	restConfig.QPS, restConfig.Burst = 50, 100
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	images, err := newImageStore(filepath.Join(cfg.rootDir, "images"))
	if err != nil {
		return err
	}
	nw, err := newNetwork(cfg.prefix, cfg.podCIDR)
	if err != nil {
		return err
	}
	if err := nw.setup(); err != nil {
		return err
	}
	defer nw.teardown()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	prov := &provider{cfg: cfg, client: client, images: images, net: nw, runtimes: map[types.UID]*podRuntime{}}
	defer prov.shutdown()
	if cfg.apiserverForward != "" {
		if prov.forwardPort, err = forward(ctx, nw.gateway.String(), cfg.apiserverForward); err != nil {
			return err
		}
	}

	mux := http.NewServeMux()
	n, err := nodeutil.NewNode(cfg.nodeName,
		func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
			prov.pods = pc.Pods
			describeNode(pc.Node, cfg, port)
			return prov, nil, nil
		},
		nodeutil.WithClient(client),
		nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(cfg.certFile, cfg.keyFile), nodeutil.WithCAFromPath(cfg.clientCA)),
		nodeutil.AttachProviderRoutes(mux),
		func(c *nodeutil.NodeConfig) error {
			c.HTTPListenAddr = cfg.listen
			c.Handler = mux
			c.SkipDownwardAPIResolution = true
			c.NumWorkers = max(runtime.NumCPU(), 4)
			return nil
		},
	)
	if err != nil {
		return err
	}
	// The node's DNS reads Services and EndpointSlices from informers of
	// its own; virtual-kubelet's do not include EndpointSlices.
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	dns := &clusterDNS{gateway: nw.gateway, services: factory.Core().V1().Services().Lister(),
		slices: factory.Discovery().V1().EndpointSlices().Lister()}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := dns.serve(ctx, net.JoinHostPort(nw.gateway.String(), "53")); err != nil {
		return fmt.Errorf("DNS: %w", err)
	}
	if cfg.storageClass != "" {
		p := &provisioner{client: client, class: cfg.storageClass, dir: filepath.Join(cfg.rootDir, "volumes"), logf: prov.logf}
		go p.run(ctx)
	}
	go prov.collect(ctx)
	go func() {
		if err := n.Run(ctx); err != nil && ctx.Err() == nil {
			log.Printf("node: %v", err)
			stop()
		}
	}()
	if err := n.WaitReady(ctx, time.Minute); err != nil {
		return fmt.Errorf("node not ready: %w", err)
	}
	log.Printf("node %s ready, kubelet API on %s, pods in %s", cfg.nodeName, cfg.listen, cfg.podCIDR)
	<-ctx.Done()
	log.Printf("stopping every pod")
	return nil
}

// describeNode fills in what the Node reports: its address and kubelet
// port, capacity, and pod CIDR.
func describeNode(n *corev1.Node, cfg *config, port int) {
	n.Labels["kubernetes.io/os"] = "linux"
	n.Labels["kubernetes.io/arch"] = runtime.GOARCH
	n.Spec.PodCIDR = cfg.podCIDR
	n.Spec.PodCIDRs = []string{cfg.podCIDR}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(strconv.Itoa(runtime.NumCPU() * 4)),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status.Capacity, n.Status.Allocatable = capacity, capacity
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: cfg.internalIP},
		{Type: corev1.NodeHostName, Address: cfg.nodeName},
	}
	// virtual-kubelet leaves the pressure conditions without a status;
	// kubectl and the node lifecycle controller expect False.
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type != corev1.NodeReady {
			c.Status, c.Reason = corev1.ConditionFalse, "ProcessNode"
		}
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	n.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: runtime.GOARCH,
		KubeletVersion: "v1.37.1", ContainerRuntimeVersion: "process://1"}
}

// forward listens on the gateway address at target's port, and at 443,
// and copies connections to target, so that pods reach a kube-apiserver
// that listens on the host's loopback only: through KUBERNETES_SERVICE_HOST
// and _PORT, and as https://kubernetes.default.svc, the port-less URL that
// kubeconfigs written for in-cluster use name (as a cluster target).
func forward(ctx context.Context, gateway, target string) (string, error) {
	_, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", err
	}
	for _, p := range []string{port, "443"} {
		if p == "443" && port == "443" {
			continue
		}
		if err := forwardFrom(ctx, net.JoinHostPort(gateway, p), target); err != nil {
			return "", err
		}
	}
	return port, nil
}

// forwardFrom copies each connection to address to target until ctx ends.
func forwardFrom(ctx context.Context, address, target string) error {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return nil
}
