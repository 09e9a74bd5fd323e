# xmlpipe — build, test and run. `make test` and `make run` install what they
# need on a fresh Debian machine (libxml2-dev, pkg-config, gcc; chromium for the tests) first.

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export CGO_ENABLED := 1
export GOFLAGS ?= -buildvcs=false
FUZZTIME ?= 30s
APT_PACKAGES := gcc libc6-dev pkg-config libxml2-dev
# chromium: the headless browser of the dashboard test (pump/bus/dashboard_test.go);
# iproute2: ip(8), for the fetch test's network namespaces (listeners/tools/fetch/netns_test.go).
TEST_APT_PACKAGES := $(APT_PACKAGES) chromium iproute2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test-deps build lint test bench fuzz soak generate run clean

all: build

## deps: install the C toolchain and libxml2 headers when missing (apt-get);
## test-deps: also Chromium, for the dashboard's browser test.
deps test-deps:
	@pkgs="$(APT_PACKAGES)"; [ "$@" = test-deps ] && pkgs="$(TEST_APT_PACKAGES)"; \
	missing=""; for p in $$pkgs; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# What `xmlpipe version` reports about the commit built (GOFLAGS above turn the go command's own
# VCS stamping off): the revision, its time in UTC, whether the tree had changes, and the tag, if any.
GIT_COMMIT = $(shell git rev-parse HEAD 2>/dev/null)
GIT_TIME = $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
GIT_MODIFIED = $(shell [ -n "$$(git status --porcelain 2>/dev/null)" ] && echo true)
GIT_TAG = $(shell git describe --tags --exact-match 2>/dev/null)
VERSION_LDFLAGS = -X main.version=$(GIT_TAG) -X main.commit=$(GIT_COMMIT) -X main.commitTime=$(GIT_TIME) -X main.modified=$(GIT_MODIFIED)

## build: the xmlpipe binary in bin/ (xmlpipe version names the commit).
build: deps
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o bin/xmlpipe ./cmd/xmlpipe

# staticcheck (2026.2.2), run at a pinned release through `go run`: a fresh machine needs no
# install, and the module's go.mod stays free of the linter's own dependencies (a `tool` directive
# would pull golang.org/x/tools and others into the module graph). Its default checks, none
# disabled: every finding is fixed in the code, or carries a //lint:ignore with its reason.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOFMT = $(shell $(GO) env GOROOT)/bin/gofmt

## lint: gofmt (fails listing the files to format), go vet, staticcheck.
lint: deps
	@files="$$($(GOFMT) -l .)"; if [ -n "$$files" ]; then \
		echo "gofmt: these files need formatting (gofmt -w):"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## test: vet and race-test everything (the CI command).
test: test-deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

## bench: stage and pump benchmarks, then the end-to-end bench.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./xmlpipe/stage/ ./xmlpipe/codec/ ./pump/ ./registry/... ./pump/federation/... ./listeners/route/
	$(GO) run ./cmd/xmlpipe bench

## fuzz: run every native fuzz target for FUZZTIME each.
fuzz: deps
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalize$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzSplitRaw$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzC14NChild$$' -fuzztime $(FUZZTIME) ./xmlpipe/internal/lx/
	$(GO) test -run '^$$' -fuzz '^FuzzLexFix$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzIsExcC14N$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzSplitSignature$$' -fuzztime $(FUZZTIME) ./xmlpipe/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./xmlpipe/codec/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendJSON$$' -fuzztime $(FUZZTIME) ./xmlpipe/codec/
	$(GO) test -run '^$$' -fuzz '^FuzzFrameAppendJSON$$' -fuzztime $(FUZZTIME) ./pump/bus/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./pump/bus/
	$(GO) test -run '^$$' -fuzz '^FuzzSplitTarget$$' -fuzztime $(FUZZTIME) ./pump/bus/
	$(GO) test -run '^$$' -fuzz '^FuzzFastFrame$$' -fuzztime $(FUZZTIME) ./pump/bench/busload/
	$(GO) test -run '^$$' -fuzz '^FuzzParseLine$$' -fuzztime $(FUZZTIME) ./pump/mcp/
	$(GO) test -run '^$$' -fuzz '^FuzzServeStdio$$' -fuzztime $(FUZZTIME) ./pump/mcp/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./pump/config/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSegment$$' -fuzztime $(FUZZTIME) ./registry/store/
	$(GO) test -run '^$$' -fuzz '^FuzzThreadPathJSON$$' -fuzztime $(FUZZTIME) ./registry/store/
	$(GO) test -run '^$$' -fuzz '^FuzzParseDotEnv$$' -fuzztime $(FUZZTIME) ./pump/config/
	$(GO) test -run '^$$' -fuzz '^FuzzEval$$' -fuzztime $(FUZZTIME) ./listeners/tools/calculate/
	$(GO) test -run '^$$' -fuzz '^FuzzLocate$$' -fuzztime $(FUZZTIME) ./listeners/tools/
	$(GO) test -run '^$$' -fuzz '^FuzzArguments$$' -fuzztime $(FUZZTIME) ./listeners/tools/command/
	$(GO) test -run '^$$' -fuzz '^FuzzHandle$$' -fuzztime $(FUZZTIME) ./oob/
	$(GO) test -run '^$$' -fuzz '^FuzzProviderReply$$' -fuzztime $(FUZZTIME) ./listeners/llm/
	$(GO) test -run '^$$' -fuzz '^FuzzPeerElements$$' -fuzztime $(FUZZTIME) ./listeners/llm/
	$(GO) test -run '^$$' -fuzz '^FuzzToolCalls$$' -fuzztime $(FUZZTIME) ./listeners/llm/
	$(GO) test -run '^$$' -fuzz '^FuzzContextUnfold$$' -fuzztime $(FUZZTIME) ./listeners/llm/
	$(GO) test -run '^$$' -fuzz '^FuzzXMLUnfold$$' -fuzztime $(FUZZTIME) ./listeners/llm/
	$(GO) test -run '^$$' -fuzz '^FuzzExtractive$$' -fuzztime $(FUZZTIME) ./listeners/llm/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./pump/federation/
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./pump/federation/envsig/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalUnsigned$$' -fuzztime $(FUZZTIME) ./pump/federation/envsig/
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./listeners/llm/aeiou/
	$(GO) test -run '^$$' -fuzz '^FuzzParseEnvelope$$' -fuzztime $(FUZZTIME) ./listeners/llm/aeiou/
	$(GO) test -run '^$$' -fuzz '^FuzzJCS$$' -fuzztime $(FUZZTIME) ./listeners/llm/aeiou/
	$(GO) test -run '^$$' -fuzz '^FuzzRootFS$$' -fuzztime $(FUZZTIME) ./listeners/wasm/
	$(GO) test -run '^$$' -fuzz '^FuzzBoundModule$$' -fuzztime $(FUZZTIME) ./listeners/wasm/
	$(GO) test -run '^$$' -fuzz '^FuzzArithmetic$$' -fuzztime $(FUZZTIME) ./listeners/route/
	$(GO) test -run '^$$' -fuzz '^FuzzAnalyze$$' -fuzztime $(FUZZTIME) ./listeners/route/
	$(GO) test -run '^$$' -fuzz '^FuzzEmbeddingReply$$' -fuzztime $(FUZZTIME) ./listeners/route/
	$(GO) test -run '^$$' -fuzz '^FuzzLiveStream$$' -fuzztime $(FUZZTIME) ./pump/console/
	$(GO) test -run '^$$' -fuzz '^FuzzParseDocument$$' -fuzztime $(FUZZTIME) ./pump/guardian/
	$(GO) test -run '^$$' -fuzz '^FuzzCallTask$$' -fuzztime $(FUZZTIME) ./pump/organism/
	$(GO) test -run '^$$' -fuzz '^FuzzProhibited$$' -fuzztime $(FUZZTIME) ./listeners/memory/
	$(GO) test -run '^$$' -fuzz '^FuzzParseThreadID$$' -fuzztime $(FUZZTIME) ./registry/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME) ./pump/federation/
	$(GO) test -run '^$$' -fuzz '^FuzzToolSchema$$' -fuzztime $(FUZZTIME) ./listeners/mcpclient/
	$(GO) test -run '^$$' -fuzz '^FuzzFill$$' -fuzztime $(FUZZTIME) ./listeners/mcpclient/

## soak: long-running leak and crash tests, and the WASM RSS check without the race detector,
## one package at a time (-p 1): their timing checks (restart within 1 s) must not share the cores
## with another package's 500-client soak.
soak: deps
	XMLPIPE_SOAK=1 $(GO) test -p 1 -count=1 -timeout 60m -run 'Soak|Crash|GrowRSS' -v ./...

## generate: regenerate schemas/<listener>/ from the Go payload types.
generate:
	$(GO) generate ./...

## run: the console example on the embedded hello-world organism.
run: deps
	$(GO) run ./cmd/xmlpipe console organism.yaml

clean:
	rm -rf bin
