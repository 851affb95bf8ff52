# chock: the policy toolchain of the Chock agent harness.
GO ?= go
FUZZTIME ?= 20s
BENCHTIME ?= 1s

.PHONY: build test lint bench soak fuzz example man clean jaeger

# Jaeger, the trace backend the telemetry tests read chock's spans back
# from: built from its own module (tools/jaeger), so chock's go.mod takes
# none of its dependencies. The first build takes minutes (about 13 min of
# CPU); the binary is kept until tools/jaeger's go.sum changes.
JAEGER := $(CURDIR)/tools/jaeger/bin/jaeger
export CHOCK_JAEGER ?= $(JAEGER)

jaeger: $(JAEGER)
$(JAEGER): tools/jaeger/go.mod tools/jaeger/go.sum
	cd tools/jaeger && $(GO) build -o bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger

build:
	$(GO) build -o bin/chock ./cmd/chock
	$(GO) build -o bin/chock-sandbox ./cmd/chock-sandbox

# The whole test suite: unit, corpus, testscript CLI tests, seed-corpus fuzz
# runs. The last line names every test that was skipped and why (a test
# that needs a real peer skips without it, and fails instead under CI=true).
test: $(JAEGER)
	$(GO) run ./internal/cmd/testreport -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Benchmarks, then the figures the issues name (scripts/ratios.awk): one
# line per target, "ratio NAME VALUE target OP LIMIT ok|MISS", and one per
# figure reported without a target. Every A-against-B ratio is measured in
# one process, in rounds that run A and B in turn, as the median of the
# rounds' ratios (internal/rounds): an uncached engine decision against
# the minimal hand-written OPA policy of the same rules (alone, and under
# two org ceilings), a decision at 10,000 rules against one at 10 (the
# engine and the native matcher), compile and prepare of 10,000 rules
# against opa build of the same modules (CPU time), ZON against
# encoding/json, a sandboxed exec of /bin/true against bwrap and os/exec,
# one with the file defaults' mounts against bwrap making the same, 20
# finds of a 10,000-file project in one call against the same outside,
# an unsandboxed one against os/exec, a proxied MCP tools/call against a
# direct go-sdk call, redaction against io.Copy, and through the gateway
# (chock mcp serve, over pipes as stdio is) a tools/call of exec /bin/true
# against runtime.Session and a server's tool re-served against calling
# it directly. Beside them: loading a 100,000-rule policy in a fresh
# process (CPU time and peak RSS), decisions per second, 8 sessions making
# 10,000 decisions against one stock opa run --server (eval.NewRemote)
# beside the same through the embedded engine (per second and p99), ZON parse, error
# path, fmt and lint time per MB at 100 MB vs 1 MB and lint's peak RSS
# against its input (one package at a time: the 100 MB runs must not share
# the machine), and chock diff of a 10,000-rule policy with one edit,
# with its default changed, and the adversarial worst case. And a session
# of 10,000 refused calls exporting spans to a running Jaeger, and to a
# collector that is down, each against the same with export off.
bench: $(JAEGER)
	$(GO) test -p 1 -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./zon/ ./compile/lint/ | tee bench.out
	$(GO) test -run '^$$' -bench 'CompilePrepareVsOPABuild' -benchtime 1x ./compile/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Diff' -benchmem -benchtime $(BENCHTIME) ./compile/diff/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'DecisionVsMinimal|DecisionScale|EngineDecide' -benchtime $(BENCHTIME) ./eval/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'RemoteLoad' -benchtime 1x ./eval/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'SessionsRemote' -benchtime 1x ./runtime/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Load100000' -benchtime 1x ./eval/load/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'ExecTrue|SandboxExec|SandboxFiles|FindInCall|MCPCall|ServerStart' -benchtime $(BENCHTIME) ./runtime/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'RedactVsCopy' -benchtime $(BENCHTIME) ./runtime/redact/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Egress' -benchtime $(BENCHTIME) ./runtime/egress/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'NetNamespace' -benchtime $(BENCHTIME) ./runtime/sandbox/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Gateway' -benchtime $(BENCHTIME) ./runtime/gateway/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Telemetry' -benchtime 1x ./runtime/ | tee -a bench.out
	$(GO) test -run '^$$' -bench 'HookProcess|RunOneCall' -benchtime 20x ./cmd/chock/ | tee -a bench.out
	@awk -f scripts/ratios.awk bench.out
	@rm -f bench.out

# The soak test (not in make test): SOAK_CALLS proxied MCP tools/calls
# through a session, each with a 10 s budget, counting the calls that
# fail or take longer than a second, with the slowest call's time.
SOAK_CALLS ?= 100000
soak:
	SOAK_CALLS=$(SOAK_CALLS) $(GO) test -count=1 -timeout 0 -run '^TestSoakMCP$$' -v ./runtime/

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
