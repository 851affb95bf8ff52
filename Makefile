# chock: the policy toolchain of the Chock agent harness.
GO ?= go
FUZZTIME ?= 20s
BENCHTIME ?= 1s

.PHONY: build test lint bench fuzz example man clean

build:
	$(GO) build -o bin/chock ./cmd/chock
	$(GO) build -o bin/chock-sandbox ./cmd/chock-sandbox

# The whole test suite: unit, corpus, testscript CLI tests, seed-corpus fuzz
# runs. The last line names every test that was skipped and why (a test
# that needs a real peer skips without it, and fails instead under CI=true).
test:
	$(GO) run ./internal/cmd/testreport -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Benchmarks, then the figures the issues name: ZON parse vs encoding/json,
# ZON parse, error path, fmt and lint time per MB at 100 MB vs 1 MB and
# lint's peak RSS against its input (one package at a time: the 100 MB
# runs must not share the machine), one decision at 10,000 rules vs 10
# rules (OPA and the native matcher), chock diff of a 10,000-rule policy
# with one edit (under 100 ms) and with its default changed, and the
# adversarial worst case up to the region cap,
# decisions per second through eval.Engine, serial and parallel, a brokered
# exec of /bin/true against os/exec, a proxied MCP tools/call against a
# direct go-sdk call to the same local server, redaction against io.Copy,
# and through the gateway (chock mcp serve, over pipes as stdio is): a
# tools/call of exec /bin/true against the same call through
# runtime.Session, and a server's tool re-served against calling it
# directly (the helper server, and server-everything when installed), each
# pair interleaved call by call in one process.
bench:
	$(GO) test -p 1 -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./zon/ ./compile/lint/ | tee bench.out
	$(GO) test -run '^$$' -bench 'Decision' -benchmem -benchtime $(BENCHTIME) ./compile/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'CompilePrepare' -benchmem -benchtime 3x ./compile/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Diff' -benchmem -benchtime $(BENCHTIME) ./compile/diff/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'EngineDecide' -benchmem -benchtime $(BENCHTIME) ./eval/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'ExecTrue|SandboxExec|MCPCall' -benchmem -benchtime $(BENCHTIME) ./runtime/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Redact|Copy' -benchmem -benchtime $(BENCHTIME) ./runtime/redact/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Gateway' -benchmem -benchtime $(BENCHTIME) ./runtime/gateway/ | tee -a bench.out
	@awk -f scripts/ratios.awk bench.out
	@rm -f bench.out

# A short run of every fuzz target (FUZZTIME each).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
	  done; \
	done

# The main job on the bundled example, as a CI step would run it: lint the
# project under its org ceiling, check the files are formatted, run the
# policy tests, check the pinned reach, compile the bundle, and explain a
# refused action.
example: build
	./bin/chock lint --org examples/org.zon examples/chock.zon
	./bin/chock fmt --check examples/chock.zon examples/org.zon
	./bin/chock test --org examples/org.zon examples/chock.zon
	./bin/chock reach --org examples/org.zon --check examples/reach.txt examples/chock.zon
	./bin/chock compile --org examples/org.zon -o bin/bundle.tar.gz examples/chock.zon
	./bin/chock explain --config examples/chock.zon --org examples/org.zon exec.path.curl
	CHOCK_STATE_DIR=$(CURDIR)/bin/state CHOCK_CONFIG_DIR=$(CURDIR)/bin/config ./bin/chock run --config examples/chock.zon --org examples/org.zon --ask deny --script examples/script.jsonl

# The man pages, docs/man/*.1: one for chock and one for each command,
# generated from the command tree by cobra/doc (the hidden chock __man) and
# dated by the last commit. go test ./cmd/chock/ checks they are in step.
man: build
	rm -f docs/man/*.1
	TZ=UTC SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) ./bin/chock __man docs/man

clean:
	rm -rf bin
