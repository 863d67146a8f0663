# shardwise: make run starts the allocator on the embedded example; make test
# builds everything the tests need (the envtest control plane included) and runs
# them. See README.md.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
BIN     := $(CURDIR)/bin
GEN_MOD := $(CURDIR)/hack/tools/gen
LINT_MOD:= $(CURDIR)/hack/tools/lint
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT  := $(BIN)/golangci-lint
MONITORING_PKG := github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring

export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 60s
export KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT ?= 60s

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build the allocator, operator and OpAMP bridge into bin/.
	@echo ">> build: bin/allocator bin/operator bin/opamp-bridge"
	$(GO) build -ldflags "-X $(VERSION_PKG).Revision=$(REVISION)" -o $(BIN)/ ./cmd/allocator ./cmd/operator ./cmd/opamp-bridge

.PHONY: run
run: build ## Run the allocator on examples/allocator.yaml (no cluster needed).
	$(BIN)/allocator --config-file=examples/allocator.yaml

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd for envtest (cached outside the repo).
	@./hack/envtest.sh >/dev/null

CHROMIUM := /usr/bin/chromium
# Modules of their own, so the main module (what a user of apis or of the
# binaries pulls) does not require their heavy test and benchmark
# dependencies: the benchmarks (gonum/plot, vegeta, google/pprof,
# buraksezer/consistent) and the status page browser test (chromedp). Both
# import the main module through a replace.
BENCH_MOD   := benchmarks
BROWSER_MOD := test/browser

.PHONY: browser
browser: ## Install Debian's chromium for the status page browser test, if missing (needs root and apt).
	@if [ -x $(CHROMIUM) ]; then echo ">> browser: $(CHROMIUM) is installed"; \
	else echo ">> browser: $(CHROMIUM) is missing: apt-get update && apt-get install -y chromium"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; fi

.PHONY: test-unit
test-unit: ## Unit tests: no control plane, envtest tests skip, the browser test skips without chromium.
	@echo ">> test-unit: go test ./... (envtest tests skip)"
	@[ -x $(CHROMIUM) ] || echo ">> test-unit: $(CHROMIUM) is missing: TestStatusPageInChromium skips (make browser installs it)"
	env -u KUBEBUILDER_ASSETS $(GO) test -count=1 ./...
	cd $(BENCH_MOD) && env -u KUBEBUILDER_ASSETS $(GO) test -count=1 ./...
	cd $(BROWSER_MOD) && $(GO) test -count=1 ./...

.PHONY: test
test: browser ## All tests, against a real kube-apiserver and etcd, and the status page in Chromium.
	@echo ">> test: building the envtest control plane (cached after the first run)"
	@assets=$$(./hack/envtest.sh) && \
	  echo ">> test: go test ./... with KUBEBUILDER_ASSETS=$$assets" && \
	  KUBEBUILDER_ASSETS=$$assets SHARDWISE_REQUIRE_ENVTEST=1 $(GO) test -count=1 ./... && \
	  echo ">> test: the benchmarks module's tests ($(BENCH_MOD))" && \
	  cd $(BENCH_MOD) && KUBEBUILDER_ASSETS=$$assets SHARDWISE_REQUIRE_ENVTEST=1 $(GO) test -count=1 ./...
	@echo ">> test: the status page in $(CHROMIUM) ($(BROWSER_MOD))"
	cd $(BROWSER_MOD) && SHARDWISE_REQUIRE_CHROMIUM=1 $(GO) test -count=1 ./...
	@echo ">> test: the race detector over the concurrent packages (allocation, discovery/..., server, internal/allocator)"
	$(GO) test -count=1 -race ./allocation/ ./discovery/... ./server/ ./internal/allocator/
	@if [ -f test/e2e/go.mod ]; then \
	  echo ">> test: end-to-end with the OpenTelemetry Collector's Prometheus receiver (test/e2e)"; \
	  $(MAKE) --no-print-directory test-e2e; fi
	@echo ">> test: the Helm chart with Helm's library, installed into the envtest control plane (test/chart)"
	$(MAKE) --no-print-directory test-chart
	@echo ">> test: the tenant attack suite against the operator and allocator binaries in envtest (test/attack)"
	$(MAKE) --no-print-directory test-attack
	@echo ">> test: the takeover of what the upstream operator built, by the operator binary in envtest (test/takeover)"
	$(MAKE) --no-print-directory test-takeover
	@echo ">> test: the container images (make images, then the checks in hack/tools/images)"
	$(MAKE) --no-print-directory test-images

.PHONY: test-e2e
test-e2e: build ## End-to-end tests with the real Prometheus receiver (separate module).
	@assets=$$(./hack/envtest.sh) && cd test/e2e && \
	  KUBEBUILDER_ASSETS=$$assets SHARDWISE_ALLOCATOR_BIN=$(BIN)/allocator $(GO) test -count=1 -timeout 20m ./...

# The release version (internal/version.Version) tags the images; make images
# VERSION=v0.2.0 overrides it, and builds the binaries with it.
VERSION     ?= $(shell awk -F'"' '/^var Version = /{print $$2}' internal/version/version.go)
VERSION_PKG := github.com/shardwise/shardwise/internal/version
# REVISION is the commit the binaries report (--version, shardwise_build_info)
# when the toolchain stamps none (GOFLAGS=-buildvcs=false).
REVISION    ?= $(shell git -C $(CURDIR) rev-parse HEAD 2>/dev/null)
IMAGE_REPO  ?= ghcr.io/shardwise
PLATFORM    ?= linux/$(shell $(GO) env GOARCH)
IMAGES_MOD  := $(CURDIR)/hack/tools/images
IMAGES_BIN  := $(BIN)/images/$(subst /,_,$(PLATFORM))

.PHONY: images
images: ## OCI images of the allocator, operator and OpAMP bridge as OCI layout tar files in bin/images (no container engine).
	@echo ">> images: static binaries (CGO_ENABLED=0) for $(PLATFORM), version $(VERSION), into $(IMAGES_BIN)"
	CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(PLATFORM))) GOARCH=$(word 2,$(subst /, ,$(PLATFORM))) \
	  $(GO) build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION)" -o $(IMAGES_BIN)/ ./cmd/allocator ./cmd/operator ./cmd/opamp-bridge
	@echo ">> images: $(IMAGE_REPO)/{allocator,operator,opamp-bridge}:$(VERSION) into $(BIN)/images/<name>.tar"
	cd $(IMAGES_MOD) && $(GO) run . build --bin-dir $(IMAGES_BIN) --out $(BIN)/images --version $(VERSION) \
	  --revision "$$(git -C $(CURDIR) rev-parse HEAD 2>/dev/null || true)" --repository $(IMAGE_REPO) --platform $(PLATFORM) \
	  allocator operator opamp-bridge
	@echo ">> images: push one with the same library (credentials of docker login), e.g."
	@echo "     cd hack/tools/images && go run . push $(BIN)/images/operator.tar $(IMAGE_REPO)/operator:$(VERSION)"

.PHONY: test-images
test-images: images ## Check the images make images wrote, and the image tool's own tests (separate module).
	cd $(IMAGES_MOD) && SHARDWISE_IMAGES_DIR=$(BIN)/images SHARDWISE_VERSION=$(VERSION) $(GO) test -count=1 ./...

.PHONY: test-chart
test-chart: build ## Helm chart tests (separate module test/chart): lint, renders, golden file, schema, install into envtest and run the operator.
	@assets=$$(./hack/envtest.sh) && cd test/chart && \
	  KUBEBUILDER_ASSETS=$$assets SHARDWISE_REQUIRE_ENVTEST=1 SHARDWISE_OPERATOR_BIN=$(BIN)/operator $(GO) test -count=1 -timeout 15m ./...

.PHONY: test-attack
test-attack: build ## Tenant attack suite of issue 24 (test/attack): the real operator and allocator in envtest; the report is bin/attack-report.md.
	@assets=$$(./hack/envtest.sh) && rm -f $(BIN)/attack-report.md && status=0 && \
	  echo ">> test-attack: a tenant of team-a against bin/operator, bin/allocator and bin/opamp-bridge (envtest), report in $(BIN)/attack-report.md" && \
	  { KUBEBUILDER_ASSETS=$$assets SHARDWISE_REQUIRE_ATTACK=1 SHARDWISE_OPERATOR_BIN=$(BIN)/operator SHARDWISE_ALLOCATOR_BIN=$(BIN)/allocator \
	    SHARDWISE_BRIDGE_BIN=$(BIN)/opamp-bridge SHARDWISE_ATTACK_REPORT=$(BIN)/attack-report.md $(GO) test -count=1 -timeout 5m ./test/attack/ || status=$$?; } && \
	  if [ -f $(BIN)/attack-report.md ]; then cat $(BIN)/attack-report.md; fi && exit $$status

.PHONY: test-takeover
test-takeover: build ## Takeover test of issue 25 (test/takeover): upstream v0.158's objects adopted by bin/operator, on envtest.
	@assets=$$(./hack/envtest.sh) && \
	  echo ">> test-takeover: bin/operator takes over what the upstream operator built for its own e2e inputs (envtest)" && \
	  KUBEBUILDER_ASSETS=$$assets SHARDWISE_REQUIRE_TAKEOVER=1 SHARDWISE_OPERATOR_BIN=$(BIN)/operator \
	  $(GO) test -count=1 -timeout 5m -run TestTakeover ./test/takeover/

.PHONY: bench
bench: ## Run the benchmark suite into benchmarks/results/make-bench.txt and plot it (see benchmarks/README.md; several minutes).
	@echo ">> bench: go test -bench, output also in benchmarks/results/make-bench.txt"
	@{ $(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./allocation/ ./server/ ./discovery/; \
	  cd $(BENCH_MOD) && $(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...; } 2>&1 | tee benchmarks/results/make-bench.txt; \
	  ! grep -q -e '^FAIL' -e '^panic:' benchmarks/results/make-bench.txt
	@echo ">> bench: plotting the pipeline figures into benchmarks/results"
	cd $(BENCH_MOD) && $(GO) run ./cmd/benchplot -in results/make-bench.txt -out results

.PHONY: bench-load
bench-load: build ## Whole-process load test at 100k targets: peak RSS and http_sd latency.
	cd $(BENCH_MOD) && $(GO) run ./cmd/loadtest -allocator $(BIN)/allocator -targets 100000 -duration 20s

.PHONY: bench-cluster
bench-cluster: build ## Whole process with Kubernetes SD on a real API server: 10k and 100k targets x 10 and 100 collectors, then plots (~15 min).
	@assets=$$(./hack/envtest.sh) && mkdir -p benchmarks/results/cluster && \
	  (cd $(BENCH_MOD) && $(GO) build -o $(BIN)/clusterload ./cmd/clusterload) && \
	  for t in 10000 100000; do for c in 10 100; do \
	    echo ">> bench-cluster: $$t targets, 100 monitors, $$c collectors"; \
	    KUBEBUILDER_ASSETS=$$assets $(BIN)/clusterload -allocator $(BIN)/allocator -targets $$t -monitors 100 -collectors $$c \
	      -json benchmarks/results/cluster/targets-$$t-collectors-$$c.json || exit 1; \
	  done; done
	cd $(BENCH_MOD) && $(GO) run ./cmd/benchplot -cluster results/cluster -out results

.PHONY: stability
stability: ## Rebalance stability of consistent-hashing at 100k targets, as JSON.
	cd $(BENCH_MOD) && $(GO) run ./cmd/stability -targets 100000 -collectors 3,10,30,100 -strategy consistent-hashing -json

.PHONY: tools
tools: $(CONTROLLER_GEN) $(GOLANGCI_LINT)

$(CONTROLLER_GEN): $(GEN_MOD)/go.mod $(GEN_MOD)/go.sum
	cd $(GEN_MOD) && $(GO) build -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen

$(GOLANGCI_LINT): $(LINT_MOD)/go.mod $(LINT_MOD)/go.sum
	cd $(LINT_MOD) && $(GO) build -o $(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and the webhook configuration into config/, and the monitoring CRDs for tests.
	@if ls apis/*/*.go >/dev/null 2>&1 && grep -qr 'kubebuilder:object:root' apis; then \
	  $(CONTROLLER_GEN) crd:crdVersions=v1,generateEmbeddedObjectMeta=true paths=./apis/... output:crd:artifacts:config=config/crd/bases; fi
	@if [ -d internal/controller ] && grep -qr 'kubebuilder:rbac' internal/controller; then \
	  $(CONTROLLER_GEN) rbac:roleName=shardwise-operator paths=./internal/controller/... $$([ -d internal/webhook ] && echo paths=./internal/webhook/...) output:rbac:artifacts:config=config/rbac; fi
	@if [ -d internal/webhook ] && grep -qr 'kubebuilder:webhook' internal/webhook; then \
	  $(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=config/webhook; fi
	$(MAKE) --no-print-directory monitoring-crds chart-files

CHART := charts/shardwise

.PHONY: chart-files
chart-files: ## Template the generated CRDs into the Helm chart, and copy the RBAC rules, webhook configuration and admission policy from config/.
	@echo ">> chart-files: config/crd/bases -> $(CHART)/templates/crds (hack/chart-crds.sh), config/rbac, config/webhook and config/policy -> $(CHART)/files"
	@./hack/chart-crds.sh
	@mkdir -p $(CHART)/files/rbac $(CHART)/files/webhook $(CHART)/files/policy
	@rm -f $(CHART)/files/rbac/*.yaml $(CHART)/files/webhook/*.yaml $(CHART)/files/policy/*.yaml
	@cp config/policy/tenant-rights.yaml $(CHART)/files/policy/
	@cp config/rbac/role.yaml config/rbac/targetallocator_secret_reader.yaml $(CHART)/files/rbac/
	@cp config/webhook/manifests.yaml $(CHART)/files/webhook/

.PHONY: chart-readme
chart-readme: ## Generate the chart's README (a table of values.yaml's keys with their comments) with hack/chartdoc.
	@echo ">> chart-readme: $(CHART)/values.yaml -> $(CHART)/README.md (hack/chartdoc)"
	$(GO) run ./hack/chartdoc -chart $(CHART)

.PHONY: monitoring-crds
monitoring-crds: $(CONTROLLER_GEN) ## Generate the ServiceMonitor, PodMonitor, Probe and ScrapeConfig CRDs into test/crds.
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	  $(CONTROLLER_GEN) crd:crdVersions=v1 paths=$(MONITORING_PKG)/v1 paths=$(MONITORING_PKG)/v1alpha1 output:crd:artifacts:config=$$tmp && \
	  mkdir -p test/crds && rm -f test/crds/*.yaml && \
	  for k in servicemonitors podmonitors probes scrapeconfigs; do cp $$tmp/monitoring.coreos.com_$$k.yaml test/crds/; done

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint over the main module, the benchmarks and the browser test.
	$(GOLANGCI_LINT) run ./...
	@for m in $(BENCH_MOD) $(BROWSER_MOD); do echo ">> lint: $$m"; (cd $$m && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || exit 1; done

.PHONY: verify
verify: ## Regenerate everything, tidy modules, and fail on a diff or on a large tracked file.
	@echo ">> verify: no tracked file over 1 MiB unless hack/large-files.txt lists it"
	./hack/check-large-files.sh
	$(MAKE) --no-print-directory generate manifests
	./third_party/prometheus.sh
	./third_party/opamp-go.sh
	$(GO) mod tidy
	@for m in hack/tools/*/ test/e2e/ test/chart/ $(BENCH_MOD)/ $(BROWSER_MOD)/; do if [ -f $$m/go.mod ]; then (cd $$m && $(GO) mod tidy) || exit 1; fi; done
	$(GO) vet ./...
	@for m in $(BENCH_MOD) $(BROWSER_MOD); do (cd $$m && $(GO) vet ./...) || exit 1; done
	$(MAKE) --no-print-directory chart-readme
	@git diff --exit-code || { echo "verify: generated files or go.mod are out of date; run make verify and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- config test/crds apis charts)" || { git status --porcelain -- config test/crds apis charts; echo "verify: untracked generated files"; exit 1; }
