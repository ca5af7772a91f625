// Module node pins the stand-in kubelet of the local control plane: exec and
// port-forward streams served with the kubelet's own streaming library.
module github.com/clustergate/clustergate/test/tools/node

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	k8s.io/cri-streaming v0.37.2
	k8s.io/klog/v2 v2.140.0
	k8s.io/utils v0.0.0-20260626114624-be93311217bd
)

require (
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/moby/spdystream v0.5.1 // indirect
	golang.org/x/net v0.62.0 // indirect
	k8s.io/streaming v0.37.2 // indirect
)
