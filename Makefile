# clustergate: `make run` brings up a local control plane with clustergate
# registered; `make test` runs every test. See README.md.

GO ?= go
BIN := _output/bin
# fieldsv1string: managedFields entries that repeat across objects share
# one copy in memory (k8s.io/apimachinery's interned FieldsV1, as Cluster API
# builds); a plain build works and keeps them once per object.
TAGS := -tags=fieldsv1string
# One build configuration for everything make builds, runs and tests: static
# (no cgo, as the images need) and independent of the checkout's path, so that
# make images, make build and the tests share one build cache.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# PHASE start|end: each verify and test phase prints its start and its time,
# so that the CI log shows where a run's time goes.
PHASE := @hack/phase.sh

.PHONY: all help check build images registry chart codegen verify test test-unit test-images test-chart test-release test-monitoring test-istio test-workloads test-install test-e2e tools bench bench-proxy bench-kubeconfig bench-api release run clean

all: build

## help: list the targets with what each does
help:
	@sed -n 's/^## \([a-z-]*\): \(.*\)/\1\t\2/p' $(MAKEFILE_LIST) | awk -F'\t' '{printf "  %-17s %s\n", $$1, $$2}'

## check: before every commit, in about a minute warm: gofmt, go vet, import layers, shellcheck, golangci-lint, and the unit tests that need no etcd (go test -short)
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(TAGS) ./...
	$(GO) run ./hack/verify-imports
	hack/verify-shell.sh
	hack/tools/build.sh lint
	$(BIN)/golangci-lint run --build-tags=fieldsv1string ./...
	$(GO) test $(TAGS) -short -count=1 ./pkg/... ./cmd/...

## build: build clustergate-apiserver and the kubectl plugin kubectl-session into _output/bin
build:
	$(GO) build $(TAGS) -o $(BIN)/clustergate-apiserver ./cmd/clustergate-apiserver
	$(GO) build $(TAGS) -o $(BIN)/kubectl-session ./cmd/kubectl-session

## images: OCI images of clustergate-apiserver and the pinned etcd (with etcdctl and etcdutl), static, user 65532, no shell, built without a container runtime into the OCI layout _output/images/oci; REGISTRY=host:port also pushes them there
images:
	$(GO) run $(TAGS) ./hack/images

## release: VERSION=vX.Y.Z into _output/release/: images pushed to REGISTRY (else exported to oci/) and signed by digest with cosign (SIGNING_KEY, else a throwaway pair) with SPDX SBOM attestations, manifests per layout pinned by digest, kubectl-session archives with SHA-256 sums and the krew manifest, the Helm chart pushed and signed, the OCM component descriptor
release:
	$(GO) run $(TAGS) ./hack/release -version "$(VERSION)"

## registry: a local OCI registry on 127.0.0.1:5000 holding the images of make images, in the foreground until Ctrl-C
registry:
	$(GO) run $(TAGS) ./hack/registry

## chart: regenerate the Helm chart charts/clustergate from the kustomize layouts of artifacts/
chart:
	$(GO) run ./hack/chart

## codegen: regenerate deepcopy, defaults, conversion, OpenAPI, clientset, listers, informers
codegen:
	hack/update-codegen.sh

## verify: generated code up to date, license headers, layering, gofmt clean, shellcheck clean, go vet clean, golangci-lint clean (.golangci.yml), one version of each module across the project and its tool modules
verify:
	$(PHASE) start $@
	hack/verify-codegen.sh
	hack/verify-license.sh
	hack/verify-shell.sh
	$(GO) run ./hack/verify-imports
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(TAGS) ./...
	hack/tools/build.sh lint
	$(BIN)/golangci-lint run --build-tags=fieldsv1string ./...
	$(GO) run ./hack/verify-tool-versions
	$(PHASE) end $@

## test: every test: unit, storage, integration, images, monitoring, workloads, the shipped install and end to end
test: test-unit test-images test-chart test-release test-monitoring test-istio test-workloads test-install test-e2e

## test-unit: unit, storage (embedded etcd) and in-process integration tests
test-unit:
	$(PHASE) start $@
	$(GO) test $(TAGS) -count=1 $$($(GO) list ./... | grep -v -e /test/e2e -e /test/chart -e /test/release -e /test/monitoring -e /test/workloads -e /test/install)
	$(PHASE) end $@

## test-images: make images, then each image pushed to a registry and read back: configuration, labels, every file (no shell), static binaries that run
test-images: images
	$(PHASE) start $@
	CLUSTERGATE_IMAGES=$(CURDIR)/_output/images/oci $(GO) test $(TAGS) -count=1 -run TestImagesFromRegistry ./internal/images/
	$(PHASE) end $@

## test-chart: the Helm chart rendered with helm: each combination of its layout values gives the objects of its kustomize layout, golden renderings per values file of charts/clustergate/ci, bad values refused
test-chart:
	$(PHASE) start $@
	hack/tools/build.sh helm
	$(GO) test -count=1 ./test/chart/
	$(PHASE) end $@

## test-release: make release offline, its oci/ copied to a mirror registry, every signature and SBOM attestation verified there with cosign (a tampered image and a foreign key refused), the sums checked, the manifests pinned to the released digests, the plugin installed with krew from the manifest and archive and run
test-release:
	$(PHASE) start $@
	$(GO) test $(TAGS) -count=1 -timeout=20m -v ./test/release/
	$(PHASE) end $@

## test-monitoring: promtool checks and unit-tests the rules of artifacts/monitoring; the component and dashboard
test-monitoring:
	$(PHASE) start $@
	hack/tools/build.sh prometheus
	$(GO) test -count=1 ./test/monitoring/
	$(PHASE) end $@

## test-istio: istiod's own authorization builder turns the data plane's Istio policies into Envoy RBAC filters, evaluated per request
test-istio:
	$(PHASE) start $@
	cd test/tools/istio-authz && $(GO) test -count=1 ./...
	$(PHASE) end $@

## test-workloads: (root) a Deployment, a StatefulSet with a claim and Services run by process-kubelet, a node that runs images from a local registry as host processes, each pod in a network namespace of its own
test-workloads: tools build
	$(PHASE) start $@
	cd test/tools/process-kubelet && $(GO) test -count=1 ./...
	GO=$(GO) hack/go-test-v.sh $@ $(TAGS) -count=1 -timeout=20m ./test/workloads/
	$(PHASE) end $@

## test-install: (root) the release's HA manifest (artifacts/overlays/ha with the cert-manager component, images pinned by digest as make release renders it) under an overlay applied with kubectl apply -k onto the process node: images of make images from a local registry, certificates from cert-manager's own controllers, then used through the aggregated API and sessions/proxy; and the virtual-garden layout, pods in that cluster and the API, RBAC and Gardener in a second kube-apiserver without nodes; and the Helm chart published to the registry and installed from it with helm
test-install: tools build images
	$(PHASE) start $@
	hack/tools/build.sh cert-manager helm
	GO=$(GO) hack/go-test-v.sh $@ $(TAGS) -count=1 -timeout=30m ./test/install/
	$(PHASE) end $@

## test-e2e: the real control plane (kube-apiserver, gardener-apiserver, etcd) with clustergate registered
test-e2e: tools build
	GO=$(GO) hack/go-test-v.sh $@ -count=1 -parallel=6 -timeout=45m ./test/e2e/

## tools: build the pinned etcd, kube-apiserver, kube-controller-manager, kube-scheduler, gardener-apiserver, node, process-kubelet, prometheus and versitygw (S3)
tools:
	hack/tools/build.sh

## bench: every benchmark (not part of make test)
bench: bench-proxy bench-kubeconfig bench-api

## bench-proxy: sessions/proxy against a direct connection to the target, in one run
bench-proxy: tools build
	$(GO) run ./test/bench/proxy

## bench-kubeconfig: the GardenerClusterKubeconfig benchmark, 10,000 objects on the local control plane
bench-kubeconfig: tools build
	$(GO) run ./test/bench/kubeconfig -objects=$(or $(OBJECTS),10000)

## bench-api: LIST, create and memory at scale against the same objects as a CRD, in one run
bench-api: tools build
	$(GO) run ./test/bench/api -objects=$(or $(OBJECTS),10000)

## run: a local control plane with clustergate registered, in the foreground until Ctrl-C
run:
	hack/local-up.sh

clean:
	rm -rf _output
