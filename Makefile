# Trainyard: the front door. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Pinned tool versions and their cache paths: hack/versions.sh is the one place they are set.
version = $(shell . hack/versions.sh && echo "$$$(1)")
KUBE_VERSION := $(call version,KUBE_VERSION)
ETCD_VERSION := $(call version,ETCD_VERSION)
KUBE_BIN := $(call version,KUBE_BIN)
CONTROLLER_GEN := $(call version,CONTROLLER_GEN)
HELM_VERSION := $(call version,HELM_VERSION)
HELM := $(call version,HELM)
PROMETHEUS_VERSION := $(call version,PROMETHEUS_VERSION)
ENVTEST_ASSETS := $(call version,ENVTEST_ASSETS)

# The image the Deployment runs: the name and tag kustomize/manager/kustomization.yaml sets.
kustomize_image = $(shell sed -n 's/^[[:space:]]*$(1):[[:space:]]*//p' kustomize/manager/kustomization.yaml)
IMAGE ?= $(call kustomize_image,newName):$(call kustomize_image,newTag)
IMAGE_ARCH ?= $(shell go env GOARCH)
IMAGE_TAR ?= bin/trainyard-image.tar

DEVCLUSTER_DIR ?= $(CURDIR)/.devcluster
KUBECTL := $(KUBE_BIN)/kubectl
GO_TEST_FLAGS ?=
# Further operator flags for make run, e.g. RUN_FLAGS='--metrics-bind-address=0 --zap-log-level=debug'.
RUN_FLAGS ?=

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build bin/trainyard (static: no dynamic relocations, so less resident memory, and it runs FROM scratch).
	CGO_ENABLED=0 go build -o bin/trainyard .

.PHONY: image
image: ## Write the operator's image to bin/trainyard-image.tar with no container engine (docker/podman load -i it).
	@# The Dockerfile builds the same image; stripped (-s -w), and without -trimpath so the
	@# packages compiled for make build and the tests are reused.
	GOOS=linux GOARCH=$(IMAGE_ARCH) CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/image/linux-$(IMAGE_ARCH)/trainyard .
	go -C hack/ociimage run . -binary $(CURDIR)/bin/image/linux-$(IMAGE_ARCH)/trainyard \
	  -name $(IMAGE) -arch $(IMAGE_ARCH) -o $(CURDIR)/$(IMAGE_TAR)
	@echo "wrote $(IMAGE_TAR): $(IMAGE), linux/$(IMAGE_ARCH)"

.PHONY: tools
tools: ## Build the pinned control plane, generators and the e2e suite's scheduler-plugins and Kueue into the cache (~/.cache/trainyard).
	hack/tools.sh all

.PHONY: generate
generate: ## Generate deepcopy and apply configurations for apis/.
	hack/tools.sh controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	$(CONTROLLER_GEN) applyconfiguration:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: ## Generate the CRDs and RBAC under kustomize/ (the kubeflow.org CRDs under kustomize/kubeflow/crd) and the chart's copies.
	hack/tools.sh controller-gen
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/batch/... output:crd:dir=kustomize/crd/bases
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/kubeflow/... output:crd:dir=kustomize/kubeflow/crd
	go run ./hack/crdtrim kustomize/crd/bases/*.yaml kustomize/kubeflow/crd/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=trainyard-manager paths=./... output:rbac:dir=kustomize/rbac
	@# The chart reads copies (Helm reads no file outside the chart); make test-chart checks that
	@# chart and kustomize/ render the same objects.
	rm -rf charts/trainyard/files/crds charts/trainyard/files/rbac
	mkdir -p charts/trainyard/files/crds charts/trainyard/files/rbac
	cp kustomize/crd/bases/*.yaml kustomize/kubeflow/crd/*.yaml charts/trainyard/files/crds/
	cp kustomize/rbac/role.yaml charts/trainyard/files/rbac/manager-role.yaml
	cp kustomize/kubeflow/role.yaml charts/trainyard/files/rbac/kubeflow-role.yaml
	cp kustomize/rbac/user_roles.yaml charts/trainyard/files/rbac/user-roles.yaml
	cp kustomize/kubeflow/user_roles.yaml charts/trainyard/files/rbac/kubeflow-user-roles.yaml

.PHONY: verify
verify: ## Regenerate everything and fail if a generated file differs, or code is unformatted.
	hack/verify.sh

##@ Test

.PHONY: test
test: ## Run every test layer: unit, image, fuzz, real PyTorch, chart, alerts (promtool), integration (envtest), e2e (local cluster).
	@for step in tools verify test-unit test-image test-fuzz test-torch test-chart test-monitoring test-integration test-e2e; do \
	  start=$$SECONDS; \
	  $(MAKE) --no-print-directory $$step || { echo "== make $$step FAILED after $$((SECONDS - start))s"; exit 1; }; \
	  echo "== make $$step passed in $$((SECONDS - start))s"; \
	done

.PHONY: test-unit
test-unit: ## Unit and golden tests (no cluster).
	@echo "== layer: unit"
	go vet ./...
	go test $(GO_TEST_FLAGS) ./...

.PHONY: test-image
test-image: image ## Check the image tarball: entrypoint, user 65532, the static binary, no shell.
	@echo "== layer: image ($(IMAGE_TAR))"
	go -C hack/ociimage vet .
	go vet -tags image ./hack/imagetest
	IMAGE_TAR=$(CURDIR)/$(IMAGE_TAR) IMAGE=$(IMAGE) IMAGE_ARCH=$(IMAGE_ARCH) \
	  go test -tags image -count=1 -v ./hack/imagetest

# Budgets are counts, not durations: Go 1.26's coordinator can report a bare "context deadline
# exceeded" failure when a -fuzztime duration ends while a worker is mid-call (go.dev/issue/75804,
# fixed in Go 1.27); a count has no deadline to race. Minimizing each new interesting input is
# capped too, or it takes most of a short run. About 10 s per target on a 2-core machine.
FUZZTIME ?= 10000x
FUZZMINIMIZETIME ?= 200x

.PHONY: test-fuzz
test-fuzz: ## Short fuzz runs of render (10,000 executions per target); FUZZTIME=... for longer.
	@echo "== layer: fuzz (render, $(FUZZTIME) per target)"
	@# go test -fuzz runs one target per invocation; the targets are listed, so a new one is run too.
	targets=$$(go test -list '^Fuzz' ./render | grep '^Fuzz'); \
	for target in $$targets; do \
	  echo "-- $$target"; \
	  go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./render || exit 1; \
	done

.PHONY: test-torch
test-torch: ## Real PyTorch (Debian 12's torch 1.13 and Debian 13's 2.x) runs every launch mode's rendered pods as processes in network namespaces (root).
	@echo "== layer: torch (real PyTorch processes, one network namespace per pod)"
	hack/torch.sh
	go vet -tags torch ./hack/torchtest
	TRAINYARD_TORCH_ROOT=$(call version,TORCH_ROOT) TRAINYARD_TORCH_ROOT_VERSION=$(call version,TORCH_ROOT_VERSION) \
	  go test -json -tags torch -count=1 -timeout 30m ./hack/torchtest | go run ./hack/testsummary

.PHONY: test-chart
test-chart: ## Lint and render charts/trainyard (pinned helm): the same objects as kustomize/, values applied, alerts as documented.
	@echo "== layer: chart (helm $(HELM_VERSION), kustomize of kubectl $(KUBE_VERSION))"
	hack/tools.sh helm
	hack/tools.sh kube
	$(HELM) lint --strict charts/trainyard
	$(HELM) lint --strict charts/trainyard --set kubeflow.enabled=true,metrics.serviceMonitor.enabled=true,prometheusRule.enabled=true
	go vet -tags chart ./hack/charttest
	HELM=$(HELM) KUBECTL=$(KUBECTL) go test -tags chart -count=1 -v ./hack/charttest

.PHONY: test-monitoring
test-monitoring: ## Play every alert of docs/prometheus with the pinned promtool: it fires where its text says, and stays silent beside.
	@echo "== layer: monitoring (promtool of Prometheus $(PROMETHEUS_VERSION))"
	hack/tools.sh prometheus
	go vet -tags prometheus ./hack/promtest
	PROMTOOL=$(call version,PROMETHEUS_BIN)/promtool go test -tags prometheus -count=1 -v ./hack/promtest

.PHONY: test-integration
test-integration: ## Admission tests against a real kube-apiserver (envtest).
	@echo "== layer: integration (envtest: etcd $(ETCD_VERSION), kube-apiserver $(KUBE_VERSION))"
	hack/tools.sh envtest
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test $(GO_TEST_FLAGS) -tags integration -count=1 -v ./integration/...

.PHONY: test-e2e
test-e2e: build ## End-to-end tests (e2e-framework) on a fresh local cluster; E2E_PROVIDER=kind|existing on a laptop.
	@echo "== layer: e2e (provider $${E2E_PROVIDER:-local})"
	hack/tools.sh helm
	hack/tools.sh prometheus
	hack/tools.sh kube-previous
	go test -json $(GO_TEST_FLAGS) -tags e2e -count=1 -timeout 30m ./e2e/... | go run ./hack/testsummary

.PHONY: bench
bench: ## Run the render benchmarks.
	go test -run '^$$' -bench . -benchmem ./render/...

.PHONY: bench-scale
bench-scale: build ## Both APIs (PyTorchTrainingJob, kubeflow.org PyTorchJob) at 50x8, 1x1000, 200x8, 1x5000 beside the floor and Kubeflow's tuned figures, on a 20-node cluster (.devcluster/bench/results.md); BENCH_ARGS='--scale=small' for a light run, '--runs=3' for medians of 3 runs, '--scenarios=gang-restart' for the gang restart.
	go run ./hack/benchscale $(BENCH_ARGS)

.PHONY: peer
peer: ## Build Kubeflow's training-operator v1.8.1 (hack/peer, from the Go module proxy) into bin/peer/ with its PyTorchJob CRD and ClusterRole: make bench-scale BENCH_ARGS='--peer' then measures it on the same harness.
	cd hack/peer && CGO_ENABLED=0 go build -o ../../bin/peer/training-operator.v1 .
	d=$$(go -C hack/peer list -m -f '{{.Dir}}' github.com/kubeflow/training-operator) && \
	  install -m 0644 $$d/manifests/base/crds/kubeflow.org_pytorchjobs.yaml $$d/manifests/base/rbac/role.yaml bin/peer/

# The tuned peer of issue 19; PEER_FLAGS= plays it at its defaults.
PEER_FLAGS ?= --kube-api-qps=1000 --kube-api-burst=2000 --controller-threads=16

.PHONY: bench-peer
bench-peer: build peer ## Kubeflow's training-operator v1.8.1 on make bench-scale's harness, kubeflow.org at the four sizes: tuned as in issue 19 (PEER_FLAGS), PEER_FLAGS= for its defaults; BENCH_ARGS as for bench-scale.
	go run ./hack/benchscale --peer --operator-flags="$(PEER_FLAGS)" $(BENCH_ARGS)

# make bench-side-by-side: where each column's run goes, and the arguments of all three.
SIDE_DIR ?= .devcluster/side-by-side
SIDE_ARGS ?= --runs=2

.PHONY: bench-side-by-side
bench-side-by-side: build peer ## Issue 19's side-by-side, as a new user would run it: Trainyard at its defaults, the peer tuned (PEER_FLAGS) and the peer at its defaults, kubeflow.org at the four sizes, each its own bench-scale run on the same harness, set side by side in $(SIDE_DIR)/side-by-side.md (about 50 minutes; SIDE_ARGS='--sizes=50x8,200x8 --runs=1' for less). A run that breaks leaves its column partly empty.
	-go run ./hack/benchscale --apis=kubeflow --dir=$(SIDE_DIR)/trainyard $(SIDE_ARGS)
	-go run ./hack/benchscale --peer --floor=false --operator-flags="$(PEER_FLAGS)" --dir=$(SIDE_DIR)/peer-tuned $(SIDE_ARGS)
	-go run ./hack/benchscale --peer --floor=false --phase-timeout=20m --dir=$(SIDE_DIR)/peer-defaults $(SIDE_ARGS)
	go run ./hack/benchscale --dir=$(SIDE_DIR) --side-by-side='Trainyard=$(SIDE_DIR)/trainyard,Kubeflow tuned=$(SIDE_DIR)/peer-tuned,Kubeflow at defaults=$(SIDE_DIR)/peer-defaults'

.PHONY: soak
soak: build ## Soak the operator on its own cluster: 10 min of random jobs, actions, pod exits and kills, invariants checked (.devcluster/soak/results.md); SOAK_ARGS='--duration=1h' for longer.
	go run ./hack/soak $(SOAK_ARGS)

##@ Cluster

.PHONY: cluster-up
cluster-up: ## Start the local loopback cluster and install the CRDs (kubeconfig: .devcluster/kubeconfig).
	DEVCLUSTER_DIR=$(DEVCLUSTER_DIR) hack/cluster.sh up
	$(MAKE) --no-print-directory install

.PHONY: cluster-down
cluster-down: ## Stop the operator of make run, the local cluster and every process it started.
	DEVCLUSTER_DIR=$(DEVCLUSTER_DIR) hack/cluster.sh down

.PHONY: install
install: ## Install the CRDs into the cluster of .devcluster/kubeconfig.
	$(DEVCLUSTER_DIR)/bin/kubectl --kubeconfig $(DEVCLUSTER_DIR)/kubeconfig apply --server-side --force-conflicts -k kustomize/crd
	@# kubectl wait fails at once on a CRD too new to have conditions: ask again for up to 60 s,
	@# showing only the last answer (a retried "accessor error" is no failure).
	@for i in $$(seq 120); do \
	  out=$$($(DEVCLUSTER_DIR)/bin/kubectl --kubeconfig $(DEVCLUSTER_DIR)/kubeconfig wait --for=condition=Established crd --all --timeout=60s 2>&1) && { echo "$$out"; break; }; \
	  [ $$i -lt 120 ] || { echo "$$out" >&2; exit 1; }; sleep 0.5; \
	done

.PHONY: install-kubeflow
install-kubeflow: ## Install the opt-in kubeflow.org CRDs (PyTorchJob, TFJob) into the cluster of .devcluster/kubeconfig; make run's operator serves them at once.
	$(DEVCLUSTER_DIR)/bin/kubectl --kubeconfig $(DEVCLUSTER_DIR)/kubeconfig apply --server-side --force-conflicts -f kustomize/kubeflow/crd
	@# As for install: kubectl wait fails at once on a CRD too new to have conditions.
	@for i in $$(seq 120); do \
	  out=$$($(DEVCLUSTER_DIR)/bin/kubectl --kubeconfig $(DEVCLUSTER_DIR)/kubeconfig wait --for=condition=Established --timeout=60s crd/pytorchjobs.kubeflow.org crd/tfjobs.kubeflow.org 2>&1) && { echo "$$out"; break; }; \
	  [ $$i -lt 120 ] || { echo "$$out" >&2; exit 1; }; sleep 0.5; \
	done

.PHONY: run
run: build cluster-up ## Start the local cluster, install the CRDs and run the operator in the foreground (RUN_FLAGS='...': more operator flags).
	@# One make run per cluster: a second one overwrote the first's PID and then failed on its
	@# ports, so make cluster-down missed the first operator, left running against no cluster.
	@pid=$$(tr -dc 0-9 < $(DEVCLUSTER_DIR)/operator.pid 2>/dev/null) || pid=; \
	cmd=$$([ -n "$$pid" ] && tr '\0' ' ' < /proc/$$pid/cmdline 2>/dev/null) || cmd=; \
	case $$cmd in *trainyard*"--kubeconfig $(DEVCLUSTER_DIR)/kubeconfig"*) \
	  echo "make run: its operator already runs against this cluster (pid $$pid); make cluster-down stops it and the cluster" >&2; exit 1;; \
	esac
	@echo
	@echo "Trainyard is starting against the local cluster. In another terminal:"
	@echo "  export KUBECONFIG=$(DEVCLUSTER_DIR)/kubeconfig PATH=$(DEVCLUSTER_DIR)/bin:\$$PATH"
	@echo "  kubectl apply -f examples/"
	@echo "  kubectl get ptj -w     # and kubectl get tfj -w: Pending, Running, Succeeded"
	@echo "Stop with Ctrl-C, or 'make cluster-down', which stops it and the cluster."
	@echo
	@# The shell records its PID and becomes the operator, so that cluster-down stops this very process.
	echo $$$$ > $(DEVCLUSTER_DIR)/operator.pid; exec bin/trainyard --kubeconfig $(DEVCLUSTER_DIR)/kubeconfig $(RUN_FLAGS)
