# drover's build. `make run` and `make test` are the whole quick start: every
# tool the tests need (Go modules, the pinned Claude Code, Codex and Gemini
# CLIs) is installed by the targets themselves.

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
CLAUDE      := tools/claude/node_modules/.bin/claude
# CI has 90 minutes; the e2e package needs far less, this only stops a hang.
TEST_TIMEOUT ?= 30m

.PHONY: all build run test test-unit test-e2e soak faults lint bench install claude codex gemini node git chromium screenshots demo clean

all: build

# Two binaries: drover, the CLI and hook client, and droverd, the
# supervisor it starts on demand (found beside drover, else on PATH).
# drover is built without cgo: a static binary starts without the dynamic
# loader, and it runs as a new process on every hook event.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/drover ./cmd/drover
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/droverd ./cmd/droverd

# Runs the supervisor for the project in the current directory, in the
# foreground (Ctrl-C stops it). Hooks and commands would also start it on
# demand.
run: build
	./bin/droverd serve --project $(CURDIR)

# Both into the same directory (GOBIN, else GOPATH/bin), where drover finds
# droverd.
install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/drover
	$(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/droverd

# Node and npm come from Debian when missing (CI runs as root on Debian).
node:
	@command -v npm >/dev/null 2>&1 || { \
	  echo "npm not found; installing Debian's nodejs and npm"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }

# drover needs git (its commit gate and work trees), and so do the tests.
git:
	@command -v git >/dev/null 2>&1 || { \
	  echo "git not found; installing Debian's git"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null; }

# Debian's Chromium, for the dashboard's browser test (cmd/drover's
# TestDashboardInABrowser drives it headless), when /usr/bin/chromium is
# missing (CI runs as root on Debian).
chromium:
	@test -x /usr/bin/chromium || { \
	  echo "chromium not found; installing Debian's chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The real Claude Code CLI, pinned in tools/claude/package-lock.json
# (version and sha512 of every package), installed into tools/claude/.
claude: node
	sh tools/claude/install.sh

# The real Codex CLI and Gemini CLI, pinned the same way in
# tools/codex/package-lock.json and tools/gemini/package-lock.json; the e2e
# tests drive them offline too (test/othercli).
codex: node
	sh tools/codex/install.sh

gemini: node
	sh tools/gemini/install.sh

test: git build claude codex gemini chromium
	$(GO) vet ./...
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

# Without the CLI: everything but the end-to-end package (the dashboard's
# browser test included, so Chromium too).
test-unit: chromium
	$(GO) test -race -short ./...

test-e2e: git build claude codex gemini
	$(GO) test -race -timeout $(TEST_TIMEOUT) -v ./test/e2e/...

# The long crash soak (test/soak): 10 sessions, 1,000 stops, the
# supervisor killed with SIGKILL throughout; prints its figures. make test
# runs a short form of it.
soak: git
	$(GO) test -race -count 1 -timeout $(TEST_TIMEOUT) -run TestSoak -v ./test/soak -args -long

# The fault tests, each run FAULT_COUNT times (make test runs them once): a
# full and a read-only disk under the store (a tmpfs; needs root, as CI
# is), a client of another uid, a failing store, and agents that hit a usage
# or rate limit, the real CLI's 429 included.
FAULT_COUNT ?= 10
faults: git build claude
	$(GO) test -race -count $(FAULT_COUNT) -timeout $(TEST_TIMEOUT) \
	  -run 'TestStoreOnAFullOrReadOnlyDisk|TestOtherUserIsShutOut|TestRunWaitsOutUsageLimit|TestRunStatusShowsUsageLimitWait' ./cmd/drover
	$(GO) test -race -count $(FAULT_COUNT) -timeout $(TEST_TIMEOUT) \
	  -run 'TestFailedCommit|TestRunLimitWaitSurvivesRestart' ./actors
	$(GO) test -race -count $(FAULT_COUNT) -timeout $(TEST_TIMEOUT) -run 'TestFailedCommitOnAFullDisk' ./internal/store
	$(GO) test -race -count $(FAULT_COUNT) -timeout $(TEST_TIMEOUT) -run 'TestRunWaitsOutRateLimitWithCLI' ./test/e2e

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Benchmarks, printed as a table (name, iterations, ns/op and the custom
# metrics: median and p99 of the hook round trip, the empty program's start,
# git status, their ratio, the supervisor's decision latency, stops/s, and
# what a loop's Stop reads of a 100 MB transcript: read-KB, cursor-KB).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./... | tee bin/bench.txt | sh scripts/benchtable.sh

# The nats executor against the local one (BenchmarkRunNATS: N=16 200 ms
# agents at C=4, two workers of concurrency 2 on an embedded NATS server)
# and the steps of its overhead per iteration (BenchmarkJobTransport), in
# repositories of 1 MB and 50 MB; `make bench` runs them too.
.PHONY: bench-nats
bench-nats: build
	$(GO) test -run '^$$' -bench 'BenchmarkRunNATS|BenchmarkJobTransport' -count 1 ./actors ./internal/natsexec | tee bin/bench-nats.txt | sh scripts/benchtable.sh

# Every fuzz target, one at a time, FUZZTIME each (go test's -fuzztime);
# `make test` only replays their seed corpora and the cases kept under
# testdata/fuzz. What a run finds is written there too. A table at the end:
# target, time, execs, result.
FUZZTIME ?= 30s
.PHONY: fuzz
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/fuzz.sh

# The dashboard's screenshots in docs/img, as the README shows them: the
# browser test of the dashboard, saving its screenshots there.
screenshots: git chromium
	DROVER_SCREENSHOT_DIR=$(CURDIR)/docs/img $(GO) test -race -count 1 -timeout $(TEST_TIMEOUT) \
	  -run '^TestDashboardInABrowser$$' ./cmd/drover

demo: build claude
	$(GO) run ./test/demo

clean:
	rm -rf bin
