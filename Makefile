# Conclave's two commands are `make demo` and `make test`; both install what
# they need (pinned, from the Go module proxy) into ./bin first.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BIN := $(CURDIR)/bin
export GOBIN := $(BIN)
export PATH := $(BIN):$(PATH)

TEMPORAL_CLI  := github.com/temporalio/cli/cmd/temporal
TEMPORAL_VER  := v1.5.1
MINIO         := github.com/minio/minio
MINIO_VER     := v0.0.0-20260212201848-7aac2a2c5b7c
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck
WFCHECK_VER   := v0.6.0
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck
STATIC_VER    := v0.8.2

# Tests that start a real Temporal dev server or MinIO carry the build tag
# `integration`; a plain `go test ./...` skips them, `make test` runs them.
GO_TAGS       := integration
GO_TEST_FLAGS ?= -count=1 -timeout 30m -tags $(GO_TAGS)

.PHONY: all tools build test lint unit fuzz demo bench clean openai-node sandbox mcp-servers

# Each fuzz target runs this long in `make test` (longer by hand: make fuzz FUZZTIME=5m).
FUZZTIME ?= 5s
FUZZ_TARGETS := ./engine/coord:FuzzMachine ./engine/coord:FuzzStaleMonotonic ./engine/coord:FuzzDecide ./engine/coord:FuzzPermutation \
                ./engine/config:FuzzParse ./engine/storage:FuzzValidKey \
                ./engine/tools:FuzzWorkspacePath ./engine/tools:FuzzParseVote ./engine/pipeline:FuzzNext \
                ./serve:FuzzParseMessages ./engine/runes:FuzzClip

all: build

# A stamp per pinned version: changing a version reinstalls that tool.
$(BIN)/.temporal-$(TEMPORAL_VER):
	@echo "installing temporal CLI $(TEMPORAL_VER) into ./bin"
	go install $(TEMPORAL_CLI)@$(TEMPORAL_VER)
	@touch $@
$(BIN)/.minio-$(MINIO_VER):
	@echo "installing MinIO $(MINIO_VER) into ./bin (the first build takes a few minutes)"
	go install $(MINIO)@$(MINIO_VER)
	@touch $@
$(BIN)/.workflowcheck-$(WFCHECK_VER):
	go install $(WORKFLOWCHECK)@$(WFCHECK_VER)
	@touch $@
$(BIN)/.staticcheck-$(STATIC_VER):
	go install $(STATICCHECK)@$(STATIC_VER)
	@touch $@

# The official openai npm client, pinned by its lock file, for the
# integration test of `conclave serve`; installed only for `make test`
# (and by hand: make openai-node) into the git-ignored .tools folder.
NODE_TOOLS  := $(CURDIR)/.tools
OPENAI_NODE := integration/openai-node
$(NODE_TOOLS)/node_modules/.installed: $(OPENAI_NODE)/package.json $(OPENAI_NODE)/package-lock.json
	@command -v npm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get install -y nodejs npm; \
	  else echo "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm)"; exit 1; fi; }
	mkdir -p $(NODE_TOOLS)
	cp $(OPENAI_NODE)/package.json $(OPENAI_NODE)/package-lock.json $(NODE_TOOLS)/
	npm ci --prefix $(NODE_TOOLS) --ignore-scripts --no-audit --no-fund
	@touch $@
openai-node: $(NODE_TOOLS)/node_modules/.installed

# The command tool's sandbox (bubblewrap) for the tests: installed with
# apt-get when it is missing and we may (root, Debian), else named.
sandbox:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update && apt-get install -y bubblewrap; \
	  else echo "bubblewrap (bwrap) is missing: the command tool's tests need it; install it (Debian: sudo apt-get install bubblewrap)"; exit 1; fi; }

# Real MCP servers for the integration tests, pinned by the lock file in
# integration/mcp-servers, installed only for the tests into the
# git-ignored .tools/npm.
MCP_NPM     := $(CURDIR)/.tools/npm
MCP_SERVERS := integration/mcp-servers
$(MCP_NPM)/node_modules/.installed: $(MCP_SERVERS)/package.json $(MCP_SERVERS)/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm)"; exit 1; }
	mkdir -p $(MCP_NPM)
	cp $(MCP_SERVERS)/package.json $(MCP_SERVERS)/package-lock.json $(MCP_NPM)/
	npm ci --prefix $(MCP_NPM) --ignore-scripts --no-audit --no-fund
	@touch $@
mcp-servers: $(MCP_NPM)/node_modules/.installed

tools: $(BIN)/.temporal-$(TEMPORAL_VER) $(BIN)/.minio-$(MINIO_VER) \
       $(BIN)/.workflowcheck-$(WFCHECK_VER) $(BIN)/.staticcheck-$(STATIC_VER)

# What `conclave --version` prints (and the workers' service.version).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

build:
	go build -ldflags "-X main.buildVersion=$(VERSION)" -o $(BIN)/conclave ./cmd/conclave

lint: tools
	@bad=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	go vet -tags $(GO_TAGS) ./...
	$(BIN)/staticcheck -tags $(GO_TAGS) ./...
	$(BIN)/workflowcheck ./workflows/...

unit:
	go test $(GO_TEST_FLAGS) ./...

# Each run starts from the seed corpus (testdata/fuzz and f.Add) in a fresh
# cache: Go replays the whole cached corpus before fuzzing, and a cache grown
# by earlier runs can take longer than FUZZTIME ("context deadline exceeded").
fuzz:
	@cache=$$(mktemp -d); for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
	  go test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg -args -test.fuzzcachedir="$$cache" > .fuzz.log 2>&1 || { cat .fuzz.log; rm -rf .fuzz.log "$$cache"; exit 1; }; \
	done; rm -rf .fuzz.log "$$cache"

# Tests start their own MinIO (and Temporal dev server) on free loopback ports.
test: tools lint build openai-node sandbox mcp-servers
	CONCLAVE_MINIO_BIN=$(BIN)/minio CONCLAVE_TEMPORAL_BIN=$(BIN)/temporal CONCLAVE_OPENAI_NODE=$(NODE_TOOLS)/node_modules \
	  CONCLAVE_MCP_NPM=$(MCP_NPM) \
	  go test $(GO_TEST_FLAGS) ./...
	$(MAKE) --no-print-directory fuzz

# A real session on a real Temporal dev server (offline demo model unless
# OPENAI_API_KEY is set); it needs only the Temporal CLI.
demo: $(BIN)/.temporal-$(TEMPORAL_VER) build
	$(BIN)/conclave demo $(DEMO_ARGS)

# What durability costs, on a real dev server and MinIO (docs/benchmarks.md):
# make bench BENCH_ARGS="--quick" for the two-minute version.
bench: tools build
	$(BIN)/conclave bench $(BENCH_ARGS)

clean:
	rm -rf $(BIN) .conclave $(NODE_TOOLS)
