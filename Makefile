# Network Enforcer: every task goes through make. `make help` lists them.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# One set of build settings for vet, tests, the distribution, the image, the control
# plane and the real node's parts, so that they share the Go build cache: a cold run
# compiles each package once. Static binaries, as the image needs; -trimpath, as the
# image (one digest per commit) and the Cilium build (from a copy of its module, in a
# new folder each time) need, and since a compile's cache key holds its flags, every
# other build takes it too.
#
# What is built from pinned versions (the tools below, the control plane, cert-manager's
# controller, the real node's parts) goes into one cache per machine, shared by every
# clone, as Go's build cache is; each part in a folder named by its version, so that
# bumping a version builds the new one beside the old.
#
# Both settings are hack/lib.sh's, which the scripts source when they run alone:
# make reads them from it, so that they are written once.
SHARED_SETTINGS := CGO_ENABLED GOFLAGS NETWORK_ENFORCER_CACHE
$(foreach v,$(SHARED_SETTINGS),$(eval export $(v) := $(shell . hack/lib.sh && echo "$$$(v)")))

# PHASE runs a recipe's command as a named phase, whose time the log of .ci/run
# keeps (make ci-phases).
PHASE := $(CURDIR)/hack/phase.sh

# Pinned tool versions. Each tool is installed once into a versioned folder of
# the cache, so bumping a version here installs the new one beside the old.
OCB_VERSION            ?= v0.165.0
CONTROLLER_GEN_VERSION ?= v0.23.0
PROTOC_GEN_GO_VERSION  ?= v1.36.12
PROTOC_GEN_GRPC_VERSION ?= v1.6.2
HELM_VERSION           ?= v3.22.0
GOLANGCI_LINT_VERSION  ?= v2.15.0
PROTOC_VERSION         := 3.21.12

TOOLS          := $(NETWORK_ENFORCER_CACHE)/tools
OCB            := $(TOOLS)/builder-$(OCB_VERSION)/builder
CONTROLLER_GEN := $(TOOLS)/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen
PROTOC_GEN_GO  := $(TOOLS)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)/protoc-gen-go
PROTOC_GEN_GRPC := $(TOOLS)/protoc-gen-go-grpc-$(PROTOC_GEN_GRPC_VERSION)/protoc-gen-go-grpc
HELM           := $(TOOLS)/helm-$(HELM_VERSION)/helm
GOLANGCI_LINT  := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
GOLDMANE_PROTO := internal/goldmanepb/goldmane.proto

# What `make generate` writes; check-generate looks at these paths only, so a work
# tree with hand edits elsewhere can still be checked.
GENERATED := chart/crds api/v1alpha1/zz_generated.deepcopy.go 'internal/goldmanepb/*.pb.go' $(COMPONENTS)

BINARY      := bin/network-enforcer
MAIN        := ./cmd/network-enforcer
# ocb writes the distribution's sources into BUILD_DIR (builder-config.yaml's
# output_path); of them, the main package keeps components.go only.
BUILD_DIR   := _build
COMPONENTS  := cmd/network-enforcer/components.go
GO_PACKAGES := ./...

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Demo

# DEMO_ARGS=-once ends the demo after the walk-through instead of at Ctrl-C.
# The demo is built and then run, not `go run`, which exits 1 on Ctrl-C whatever
# the program does; the demo takes the terminal's foreground for itself, so that
# Ctrl-C reaches only it and make ends with its exit status 0.
.PHONY: demo
demo: build controlplane $(HELM) ## Run the product on a local control plane with recorded Cilium flows: learn, promote, enforce, report. Ctrl-C stops it.
	go build -o bin/demo ./cmd/demo
	bin/demo $(DEMO_ARGS)

##@ Development

.PHONY: generate
generate: components $(CONTROLLER_GEN) $(PROTOC_GEN_GO) $(PROTOC_GEN_GRPC) protoc ## Regenerate the distribution's components.go, the deep-copy code, the CRDs (into chart/crds, their one copy, with each description's paragraphs on one line for kubectl explain) and the Goldmane protobuf code.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=chart/crds
	go run ./tools/crddocs chart/crds/*.yaml
	protoc --plugin=protoc-gen-go=$(PROTOC_GEN_GO) --plugin=protoc-gen-go-grpc=$(PROTOC_GEN_GRPC) \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative $(GOLDMANE_PROTO)

.PHONY: check-generate
check-generate: generate ## Fail if `make generate` changes the generated files.
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		echo "generated files are out of date; run make generate and commit:"; \
		git status --porcelain -- $(GENERATED); exit 1; fi

# The build modules of the control plane and of the real node's parts, whose
# shared modules stay at the distribution's versions (see tools/modalign).
BUILD_MODULES := tools/controlplane/go.mod tools/cluster/containerd/go.mod tools/cluster/coredns/go.mod tools/pins/go.mod tools/certmanager/go.mod

# LINT_ARGS passes flags to golangci-lint, e.g. LINT_ARGS='--concurrency 1' or
# LINT_ARGS=--fix. .golangci.yml says which linters run and why; go vet's analyzers
# are among them, and they read the real-node suite's files (build tag cluster) too.
.PHONY: lint
lint: $(GOLANGCI_LINT) ## Check formatting (gofmt, of every module), that the build modules share the distribution's versions, and run golangci-lint.
	@files=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$files" ]; then \
		echo "gofmt would change:"; echo "$$files"; exit 1; fi
	go run ./tools/modalign go.mod $(BUILD_MODULES)
	$(PHASE) "golangci-lint run" $(GOLANGCI_LINT) run $(LINT_ARGS) $(GO_PACKAGES)

# The browser libraries that the review page embeds, pinned in
# hack/third-party.sh; the Go build needs only the committed copies.
.PHONY: third-party
third-party: ## Refresh third_party/ (Cytoscape.js, cytoscape-dagre) from npm at the pinned versions.
	hack/third-party.sh

##@ Build

.PHONY: components
# ocb writes a main, which runs the collector only, and components.go; the
# distribution's main (cmd/network-enforcer) is ours, to add its subcommands to
# the collector's root command, and takes ocb's components.go, gofmt'd.
components: $(OCB) ## Generate the distribution's components.go from builder-config.yaml with ocb.
	$(OCB) --config builder-config.yaml --skip-compilation --skip-get-modules
	gofmt $(BUILD_DIR)/components.go > $(COMPONENTS).tmp && mv $(COMPONENTS).tmp $(COMPONENTS)

.PHONY: build
# Stripped, as the image wants it: the image takes this binary for the host's platform.
build: components ## Build the collector distribution into bin/network-enforcer.
	$(PHASE) "the distribution" go build -ldflags="-s -w" -o $(BINARY) $(MAIN)

# The image's name; by default the chart's image.repository and appVersion, so that
# the chart's defaults run an image imported into a node's containerd.
IMAGE ?= $(shell awk '/^image:/ {f = 1} f && /^  repository:/ {print $$2; exit}' chart/values.yaml):$(shell sed -n 's/^appVersion: //p' chart/Chart.yaml)
# The image's platforms, each a static build of its own; the first (the host's
# architecture by default) is the tarball's. IMAGE_PLATFORMS='linux/amd64 linux/arm64'
# adds arm64 to the OCI layout's index.
IMAGE_PLATFORMS ?= linux/$(shell go env GOARCH)
# The image's created time and its files' times: the commit's time, so that one
# commit gives one digest.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct)
IMAGE_REVISION ?= $(shell git rev-parse HEAD)$(shell git diff --quiet HEAD -- || echo -dirty)

.PHONY: image
# The host's platform takes the binary of `make build`, built with the same flags;
# each other platform is built into bin/image/.
image: build ## Build the distribution's image (IMAGE, IMAGE_PLATFORMS) into bin/ as an OCI layout and a docker tarball, without a container engine; print its digest.
	for platform in $(IMAGE_PLATFORMS); do \
		out=bin/image/$${platform/\//-}/network-enforcer; mkdir -p "$$(dirname "$$out")"; \
		if [[ "$$platform" == "$$(go env GOOS)/$$(go env GOARCH)" ]]; then cp $(BINARY) "$$out"; continue; fi; \
		GOOS=$${platform%/*} GOARCH=$${platform#*/} go build -ldflags="-s -w" -o "$$out" $(MAIN); \
	done
	$(PHASE) "image" go run ./tools/image -name '$(IMAGE)' -epoch '$(SOURCE_DATE_EPOCH)' \
		-revision '$(IMAGE_REVISION)' -version "$$(sed -n 's/^  version: //p' builder-config.yaml)" \
		$(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=bin/image/$(subst /,-,$(p))/network-enforcer) \
		-layout bin/network-enforcer-image -tarball bin/network-enforcer-image.tar

.PHONY: controlplane
controlplane: ## Build the test control plane (kube-apiserver, kube-controller-manager, etcd), cached.
	hack/controlplane.sh

.PHONY: certmanager
certmanager: ## Build cert-manager's controller for the chart's tests (tools/certmanager), cached.
	hack/certmanager.sh

.PHONY: helm
helm: $(HELM) ## Install the pinned helm, which the chart's tests and the demo run.

# The node's CNI: the Cilium agent (with Hubble and the real hubble-relay), on
# which the real-node suite runs, or CNI=bridge: a bridge network with
# kube-router's NetworkPolicy firewall, which `make cluster` builds then.
CNI ?= cilium

.PHONY: cluster-build
cluster-build: controlplane ## Build the real-node cluster's binaries (kubelet, containerd, CoreDNS, hubble-relay, the Cilium agent, ...), cached.
	hack/cluster/build.sh

.PHONY: cluster
cluster: cluster-build ## Run a real single-node cluster on this machine (root) until Ctrl-C, then clean the host; CNI=bridge for a bridge and kube-router in place of Cilium.
	go build -o bin/realnode ./tools/cluster/realnode
	bin/realnode -cni $(CNI) run

##@ Test

.PHONY: test
# What the tests need is built side by side: on a fresh machine the module
# downloads of one overlap the compiling of another. (Building the parts that
# share the distribution's module versions one after the other, so that no two
# compile a shared package at once, measured slower cold: 2,315 s against 2,225 s.)
test: ## Build what the tests need, then run unit, control-plane, browser, binary and real-node tests.
	$(MAKE) --no-print-directory -j3 $(TEST_DEPS)
	hack/test.sh

# What the tests need, longest first: the real node's parts wait for the control
# plane, and the image for the build.
TEST_DEPS := cluster-build image certmanager $(HELM) browser

# .ci/run builds what check-generate needs (the generators) beside what the tests
# need: one compiles while another downloads or links. The Debian packages (protoc,
# Chromium) come one after the other, as apt takes one install at a time.
# golangci-lint is not among them: make lint builds it, beside the tests, whose
# real-node suite mostly waits on its cluster; here it took the cores from the
# parts that the real-node suite waits for.
.PHONY: ci-deps
ci-deps: ## Build what check-generate and test need, side by side (.ci/run's first step).
	$(MAKE) --no-print-directory -j4 $(filter-out browser,$(TEST_DEPS)) $(CONTROLLER_GEN) $(PROTOC_GEN_GO) $(PROTOC_GEN_GRPC) debian-packages

.PHONY: debian-packages
debian-packages:
	$(MAKE) --no-print-directory protoc
	$(MAKE) --no-print-directory browser

.PHONY: ci-phases
ci-phases: ## Print the phases of the last .ci/run (from .cache/ci/run.log): when each started and ended, and its time.
	hack/ci-phases.sh

# The real-node suite, which `make test` runs too, alone. It starts its own
# cluster: beside `make cluster`, it waits for that one to end.
.PHONY: test-cluster
test-cluster: image cluster-build certmanager $(HELM) ## Install the chart on a real single-node cluster and prove it there (root).
	hack/test.sh -timeout 30m -v ./test/cluster/

.PHONY: capture-cilium
capture-cilium: image cluster-build $(HELM) ## Record the real Cilium agent's flows of the real-node journey into testdata/hubble/cilium-1.20/journey.jsonl.gz (root).
	NETWORK_ENFORCER_CAPTURE=$(CURDIR)/testdata/hubble/cilium-1.20/journey.jsonl.gz hack/test.sh -timeout 30m -v -run TestRealCilium ./test/cluster/

# LOADTEST_ARGS passes flags, e.g. LOADTEST_ARGS='-paths hubble -flows 2000000'.
.PHONY: loadtest
loadtest: build controlplane ## Measure the built binary under a million recorded flows of each data plane, against a receive-only baseline in the same run, and scaled out (readers and a leader) against relay mode.
	go run ./testbed/loadtest $(LOADTEST_ARGS)

# SCALETEST_ARGS passes flags, e.g. SCALETEST_ARGS='-nodes 5000 -readers 4 -kill-reader'.
.PHONY: scaletest
scaletest: build controlplane ## Drive nodes mode at a large cluster's size (500 fake Cilium nodes by default, 4 readers and a leader of the built binary, a filled API server) and print issue 54's figures.
	go run ./testbed/scaletest $(SCALETEST_ARGS)

# The review page's browser test: Debian's headless Chromium, installed once
# with apt (as root) when it is missing.
.PHONY: browser
browser: ## Install headless Chromium (Debian's chromium) for the review page's browser tests, if missing.
	hack/browser.sh

.PHONY: screenshots
screenshots: controlplane browser ## Write the review page's screenshots (docs/review-*.png) from its browser test.
	KUBEBUILDER_ASSETS=$$(hack/controlplane.sh --print) NETWORK_ENFORCER_REQUIRE_ALL=1 \
		go test -count=1 -run '^TestBrowser$$' ./extension/reviewextension/ -args -screenshots

# REVIEW_BENCH_ARGS passes flags, e.g. REVIEW_BENCH_ARGS='-bench Graph/500$$'.
.PHONY: review-bench
review-bench: controlplane browser ## Measure the review page at 500 and 5,000 workloads in headless Chromium: page load, graph render, the enforcer's memory.
	KUBEBUILDER_ASSETS=$$(hack/controlplane.sh --print) NETWORK_ENFORCER_REQUIRE_ALL=1 \
		go test -count=1 -run '^$$' -bench BrowserGraph -benchtime 3x -timeout 30m ./extension/reviewextension/ $(REVIEW_BENCH_ARGS)

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the Helm chart (helm lint --strict) with each provider.
	for provider in istio calico cilium; do \
		$(HELM) lint --strict chart --set controller.provider.name=$$provider; done

# Tools, each built once at its pinned version. All but ocb and golangci-lint
# come from one module of their own (tools/pins), which must pin the version
# named here, at the distribution's versions of the modules they share with it;
# ocb is installed by its version, as it writes that version into the sources it
# generates, and so is golangci-lint, built at the versions its release was tested
# with: its two hundred modules, golang.org/x/tools newer than controller-gen's among
# them, would otherwise move the versions of tools/pins.
# The tools' own builds set the version they print. A tool's folder is named by its
# version and shared by every clone (the cache), so a tool that is there is not
# built again: a clone's tools/pins/go.mod is newer than it whenever the clone is,
# and rebuilding would rewrite a binary that another clone may be running.

# build-tool MODULE,VERSION,PACKAGE,LDFLAGS builds PACKAGE of tools/pins into $@.
define build-tool
	@grep -qE "^\s*$(1) $(2)( |$$$$)" tools/pins/go.mod || { echo "tools/pins/go.mod does not pin $(1) $(2)"; exit 1; }
	cd tools/pins && $(PHASE) "$(notdir $@) $(2)" go build -ldflags "-s -w $(4)" -o $@ $(3)
endef

$(OCB):
	GOBIN=$(dir $@) $(PHASE) "ocb $(OCB_VERSION)" go install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) $(PHASE) "golangci-lint $(GOLANGCI_LINT_VERSION)" go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(CONTROLLER_GEN):
	$(call build-tool,sigs.k8s.io/controller-tools,$(CONTROLLER_GEN_VERSION),sigs.k8s.io/controller-tools/cmd/controller-gen,-X sigs.k8s.io/controller-tools/pkg/version.version=$(CONTROLLER_GEN_VERSION))

$(PROTOC_GEN_GO):
	$(call build-tool,google.golang.org/protobuf,$(PROTOC_GEN_GO_VERSION),google.golang.org/protobuf/cmd/protoc-gen-go)

$(PROTOC_GEN_GRPC):
	$(call build-tool,google.golang.org/grpc/cmd/protoc-gen-go-grpc,$(PROTOC_GEN_GRPC_VERSION),google.golang.org/grpc/cmd/protoc-gen-go-grpc)

$(HELM):
	$(call build-tool,helm.sh/helm/v3,$(HELM_VERSION),helm.sh/helm/v3/cmd/helm,-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION))

# protoc comes from Debian's protobuf-compiler, the one source of it here; the
# generated code names its version, so any other version changes the tree.
.PHONY: protoc
protoc:
	@if ! protoc --version 2>/dev/null | grep -qx "libprotoc $(PROTOC_VERSION)"; then \
		echo "installing protoc $(PROTOC_VERSION) (Debian protobuf-compiler)"; \
		apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null; \
		protoc --version | grep -qx "libprotoc $(PROTOC_VERSION)" || { echo "protoc $(PROTOC_VERSION) is required, found: $$(protoc --version)"; exit 1; }; \
	fi
