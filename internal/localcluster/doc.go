// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package localcluster is a local control plane for development, tests and
// benchmarks: real components, all on 127.0.0.1, with clustergate registered
// the way it is in a real cluster. `make run` (hack/local-up),
// hack/local-user, the benchmarks under test/bench and the end-to-end tests
// in test/e2e use it.
//
// Start brings up, from the pinned binaries that hack/tools/build.sh builds
// into _output/tools (and clustergate-apiserver from Options.BinDir):
//
//   - etcd, shared by both kube-apiservers under their own prefixes;
//   - the garden: a kube-apiserver with aggregation and RBAC, and a
//     kube-controller-manager with the namespace, ResourceQuota and
//     ClusterRole aggregation controllers;
//   - gardener-apiserver, registered through its APIServices, with the
//     Project and the workerless Shoot "local" (Project, Shoot);
//   - the shoot: a second kube-apiserver that is that Shoot's API server
//     (Gardener's shoots/adminkubeconfig returns kubeconfigs that work
//     against it), with an audit log (ShootAuditLog), a
//     kube-controller-manager that signs its CSRs, and one node, NodeName, a
//     stand-in kubelet that serves exec and port-forward;
//   - clustergate-apiserver with the identity of its ServiceAccount
//     (ClustergateServiceAccount) and the RBAC of artifacts/rbac, registered
//     through artifacts/apiservice, with the shoot as a cluster target
//     (ShootTargetSecret) and Istio's CRDs installed.
//
// Start returns once clustergate's APIService is Available and its OpenAPI is
// merged; Stop stops everything in reverse order. Options.Dir holds the
// control plane's files, emptied at each start: pki/ (every CA and
// certificate, issued afresh), admin.kubeconfig and shoot.kubeconfig
// (system:masters), data/ and logs/<component>.log.
//
//	cp, err := localcluster.Start(ctx, localcluster.Options{
//		Dir: "_output/local", BinDir: "_output/bin", RepoRoot: ".",
//	})
//	if err != nil { ... }
//	defer cp.Stop()
//	alice, _ := cp.UserKubeconfig("alice", "sre")
//	out, err := cp.Kubectl(ctx, alice, nil, "-n", "demo", "get", "sessions")
//
// What tests and benchmarks need beyond that:
//
//   - users: UserKubeconfig and WriteUserKubeconfig issue garden client
//     certificates (the latter for a control plane another process runs, as
//     hack/local-user does); SessionKubeconfig completes a session's
//     kubeconfig with its owner's certificate, as an exec plugin would;
//   - components: StopComponent and StartComponent stop and restart one
//     process (gardener-apiserver, clustergate) to test how the others cope;
//     Components names the running ones, PID, RSSKiB, AnonymousRSSKiB and
//     CPUTime measure one; Options.ClustergateEnv and ClustergateMemoryLimit
//     run clustergate with a setting of the Go runtime;
//   - replicas: with Options.SharedEtcd, clustergate stores its objects in
//     the garden etcd and StartReplica adds replicas behind the APIService,
//     balanced per connection as kube-proxy would; FrontProxyConfig reaches
//     one replica directly, authenticated the way the aggregator is;
//   - monitoring: StartPrometheus runs a Prometheus with the rules of
//     artifacts/monitoring, scraping clustergate.
//   - the demo: Demo creates `make run`'s objects (users' bindings, the
//     example session and kubeconfig, the data-plane session) on a control
//     plane started with DemoClustergateArgs, and Guide lists what to type
//     next with the outcome each line promises: make run prints it,
//     README.md repeats it (TestGuideInREADME) and test/e2e's TestQuickStart
//     runs it.
//
// It is for this machine only: certificates are valid for a week, etcd does
// not fsync, and every component runs with flags a production cluster would
// not use.
package localcluster
