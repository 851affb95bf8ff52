# Prints the figures make bench reports, from `go test -bench` output: one
# line per target,
#
#     ratio NAME VALUE target OP LIMIT ok|MISS (what was measured)
#
# and a line for each figure reported without a target,
#
#     figure NAME VALUE (what was measured)
#
# Every A-against-B ratio is the median of the ratios of rounds that ran
# A and B in turn in one process (internal/rounds).
function value(unit,   i) {
	for (i = 1; i < NF; i++) if ($(i + 1) == unit) return $i
	return ""
}
function name(   n) {
	n = $1
	sub(/-[0-9]+$/, "", n)
	return n
}
function target(n, v, op, limit, detail,   ok) {
	if (v == "") {
		printf "ratio %s none target %s %s MISS (not measured)\n", n, op, limit
		return
	}
	ok = (op == "<=" && v + 0 <= limit + 0) || (op == "<" && v + 0 < limit + 0) || (op == ">=" && v + 0 >= limit + 0)
	printf "ratio %s %.3f target %s %s %s (%s)\n", n, v, op, limit, (ok ? "ok" : "MISS"), detail
}
function figure(n, v, detail) {
	if (v != "")
		printf "figure %s %.3f (%s)\n", n, v, detail
}
function f2(x) { return sprintf("%.2f", x) }
function us(ns) { return sprintf("%.1f µs", ns / 1000) }
function ms(ns) { return sprintf("%.2f ms", ns / 1e6) }

/^BenchmarkZONvsJSON\// { n = name(); sub(/^BenchmarkZONvsJSON\//, "", n); zon[n] = value("zon/json"); zonA[n] = value("zon-ns/op"); zonB[n] = value("json-ns/op") }
/^BenchmarkParse\// { n = name(); sub(/^BenchmarkParse\//, "", n); parse[n] = value("MB/s") }
/^BenchmarkDecisionVsMinimal\/layers=/ { n = name(); sub(/^BenchmarkDecisionVsMinimal\/layers=/, "", n); dm[n] = value("engine/minimal"); dmA[n] = value("engine-ns/op"); dmB[n] = value("minimal-ns/op") }
/^BenchmarkDecisionScale\// { n = name(); sub(/^BenchmarkDecisionScale\//, "", n); ds[n] = value("10000/10"); dsA[n] = value("rules=10000-ns/op"); dsB[n] = value("rules=10-ns/op") }
/^BenchmarkEngineDecide\// { n = name(); sub(/^BenchmarkEngineDecide\//, "", n); eng[n] = value("decisions/s") }
/^BenchmarkSessionsRemote/ { sr = value("remote-calls/s"); srp = value("remote-p99-ms"); se = value("embedded-calls/s"); sep = value("embedded-p99-ms") }
/^BenchmarkRemoteLoad/ { rl = value("remote-decisions/s"); rlp = value("remote-p99-ms"); el = value("embedded-decisions/s"); elp = value("embedded-p99-ms") }
/^BenchmarkCompilePrepareVsOPABuild/ { cp = value("chock/opa-build"); cpA = value("chock-cpu-ms"); cpB = value("opa-build-cpu-ms"); cpWA = value("chock-wall-ms"); cpWB = value("opa-build-wall-ms") }
/^BenchmarkLoad100000/ {
	split("sources compile bundle", jobs, " ")
	for (i = 1; i <= 3; i++) {
		lcpu[jobs[i]] = value(jobs[i] "-cpu-s"); lwall[jobs[i]] = value(jobs[i] "-wall-s"); lrss[jobs[i]] = value(jobs[i] "-peak-GiB")
	}
}
/^BenchmarkExecTrue/ { ex = value("brokered/os-exec"); exA = value("brokered-ns/op"); exB = value("os-exec-ns/op") }
/^BenchmarkSandboxFiles/ { sfb = value("brokered/bwrap"); sfA = value("brokered-ns/op"); sfB = value("bwrap-ns/op") }
/^BenchmarkFindInCall/ { fic = value("in-call/outside"); ficA = value("in-call-ns/op"); ficB = value("outside-ns/op") }
/^BenchmarkServerStart/ { ssr = value("sandboxed/bare"); ssA = value("sandboxed-ns/op"); ssB = value("bare-ns/op") }
/^BenchmarkRunOneCall/ { roc = value("median-ms/run"); rocp = value("path-folders") }
/^BenchmarkHookProcess\/opa/ { hkr = value("hook/opa-eval"); hkA = value("hook-ns/op"); hkB = value("opa-eval-ns/op") }
/^BenchmarkHookProcess\/scale/ { hsr = value("10000/small"); hsA = value("rules=10000-ns/op"); hsB = value("small-ns/op") }
/^BenchmarkSandboxExec/ { sbw = value("brokered/bwrap"); sex = value("brokered/os-exec"); sb = value("brokered-ns/op"); bw = value("bwrap-ns/op"); oe = value("os-exec-ns/op"); sbn = value("brokered/bwrap-net"); bwn = value("bwrap-net-ns/op"); cxr = value("codex/brokered"); cxn = value("codex-ns/op"); srr = value("srt-lib/brokered"); srn = value("srt-lib-ns/op") }
/^BenchmarkEgressDownload/ { egd = value("proxied/direct-throughput"); egdA = value("proxied-MiB/s"); egdB = value("direct-MiB/s") }
/^BenchmarkNetNamespace/ { nn = value("net/no-net"); nnA = value("net-µs/op"); nnB = value("no-net-µs/op") }
/^BenchmarkEgressConnect/ { egc = value("extra-ms/connection"); egcA = value("proxied-ns/op"); egcB = value("direct-ns/op") }
/^BenchmarkMCPCall/ { mc = value("proxied/direct"); mcA = value("proxied-ns/op"); mcB = value("direct-ns/op") }
/^BenchmarkGatewayExec/ { gw["Exec"] = value("ratio"); gwa["Exec"] = value("gateway-ns/call"); gwb["Exec"] = value("session-ns/call") }
/^BenchmarkGatewayBare\// { n = name(); sub(/^BenchmarkGatewayBare\//, "", n); gbr[n] = value("ratio"); gba[n] = value("reserved-ns/call"); gbb[n] = value("bare-ns/call") }
/^BenchmarkGateway(Upstream|UpstreamSlow|Everything)-/ { n = name(); sub(/^BenchmarkGateway/, "", n); gw[n] = value("ratio"); gwa[n] = value("reserved-ns/call"); gwb[n] = value("direct-ns/call") }
/^BenchmarkTelemetry\// { n = name(); sub(/^BenchmarkTelemetry\/collector=/, "", n); sub(/\/exec$/, "-exec", n); tel[n] = value("on/off"); telA[n] = value("on-ns/call"); telB[n] = value("off-ns/call"); teld[n] = value("dropped") }
/^BenchmarkRedactVsCopy/ { red = value("redact/copy"); redA = value("redact-ns/op"); redB = value("copy-ns/op") }
/^BenchmarkScale[A-Za-z]+\// { n = name(); sub(/^BenchmarkScale/, "", n); scale[n] = value("ms/MB"); rss[n] = value("peak-RSS/input") }
/^BenchmarkDiff\// { n = name(); sub(/^BenchmarkDiff\//, "", n); dms[n] = value("ms/diff"); dreg[n] = value("regions") }
/^BenchmarkDiffWorst\// { n = name(); sub(/^BenchmarkDiffWorst\/k=/, "", n); wms[n] = value("ms/diff"); wreg[n] = value("regions"); wrules[n] = value("rules"); wcap[n] = value("capped") }
END {
	# Decisions (issue 18): the engine against the minimal hand-written policy.
	target("decision/minimal-policy,1-layer", dm["1"], "<=", "2.0", "an uncached engine decision, 10,000 rules, " us(dmA["1"]) " vs " us(dmB["1"]))
	target("decision/minimal-policy,project+2-orgs", dm["3"], "<=", "2.5", "the same under two org ceilings, " us(dmA["3"]) " vs " us(dmB["3"]))
	# Decisions cost the same however many rules (issue 4).
	target("decision-10000/10-rules,engine", ds["engine"], "<=", "1.5", us(dsA["engine"]) " vs " us(dsB["engine"]))
	target("decision-10000/10-rules,native", ds["native"], "<=", "1.5", sprintf("%.0f vs %.0f ns", dsA["native"], dsB["native"]))
	for (k in eng)
		printf "figure engine-decisions-per-second,%s %d (eval.Engine, the cache as a session has it)\n", k, eng[k]
	# A remote OPA (issue 17): 8 sessions, 10,000 distinct decisions in all.
	figure("remote-opa-decisions-per-second,8-sessions", rl, "eval.NewRemote against one opa run --server on 127.0.0.1, p99 " rlp " ms")
	figure("embedded-decisions-per-second,8-sessions", el, "the same 10,000 decisions through the embedded engine, uncached, p99 " elp " ms")
	figure("remote-opa-session-calls-per-second,8-sessions", sr, "8 runtime sessions, 10,000 fetch calls each refused by one decision, against one opa run --server, p99 " srp " ms")
	figure("embedded-session-calls-per-second,8-sessions", se, "the same calls through the policy in process, p99 " sep " ms")
	# One compile per load (issue 18).
	target("compile+prepare/opa-build,10000-rules", cp, "<=", "0.5", "CPU " cpA " vs " cpB " ms; wall " cpWA " vs " cpWB " ms")
	target("load-100000-rules,cpu-seconds", lcpu["sources"], "<=", "4", "chock.zon decoded, linted, compiled once, prepared, one decision; wall " lwall["sources"] " s")
	target("load-100000-rules,peak-GiB", lrss["sources"], "<=", "1", "the same, peak RSS")
	figure("compile-100000-rules,cpu-seconds", lcpu["compile"], "what chock compile does, wall " lwall["compile"] " s, peak " lrss["compile"] " GiB")
	figure("load-bundle-100000-rules,cpu-seconds", lcpu["bundle"], "eval --bundle's load, wall " lwall["bundle"] " s, peak " lrss["bundle"] " GiB")
	# ZON against encoding/json (issues 2 and 18): throughput, JSON's time over ZON's.
	for (k in zon)
		target("zon/json-throughput," k, zon[k], ">=", "1.0", ms(zonA[k]) " vs " ms(zonB[k]) ", " parse[k] " MB/s")
	# The run time.
	target("sandboxed-exec/bwrap", sbw, "<=", "1.2", sprintf("%d vs %d ns/op", sb, bw))
	# The network fence (issue 26), and below bubblewrap itself (issue 31).
	target("sandboxed-exec/bwrap--unshare-net", sbn, "<=", "0.6", sprintf("chock's own network namespace and proxy listeners, %d vs %d ns/op", sb, bwn))
	figure("sandbox-with-network-namespace/without", nn, "Spec.Net's namespace, loopback and listeners, " nnA " vs " nnB " µs")
	target("egress-download-64MiB/direct,throughput", egd, ">=", "0.7", "through the egress proxy from 127.0.0.1, " egdA " vs " egdB " MiB/s")
	target("egress-connection-setup,extra-ms", egc, "<=", "1.5", "a connection and one request through the proxy, " us(egcA) " vs " us(egcB) " direct")
	figure("sandboxed-exec/os-exec", sex, sprintf("%d vs %d ns/op", sb, oe))
	# The other harnesses' sandboxes, where installed (issue 31): their time over chock's.
	figure("codex-linux-sandbox/chock-sandboxed-exec", cxr, sprintf("Codex's per-command helper, read-only profile, %d vs %d ns/op", cxn, sb))
	figure("sandbox-runtime-library/chock-sandboxed-exec", srr, sprintf("@anthropic-ai/sandbox-runtime's wrapWithSandbox and a shell spawn, one SandboxManager, %d vs %d ns/op", srn, sb))
	target("session-start,one-call-run-ms", roc, "<=", "60", sprintf("chock run of one sandboxed exec true, a whole process, this machine's PATH (%d folders), the median run", rocp))
	target("server-start-sandboxed/bare", ssr, "<=", "1.5", sprintf("a local MCP server's start in the sandbox against --no-sandbox, %s vs %s", ms(ssA), ms(ssB)))
	target("hook-process/opa-eval", hkr, "<=", "0.5", sprintf("chock hook claude-code answering one Bash event, a whole process, against opa eval --bundle of the same decision, %s vs %s", ms(hkA), ms(hkB)))
	target("hook-10000/small", hsr, "<=", "1.5", sprintf("the same hook event under a 10,000-rule policy against the github template's, %s vs %s", ms(hsA), ms(hsB)))
	target("file-rules-exec/bwrap", sfb, "<=", "1.25", sprintf("%d vs %d ns/op, the file defaults' mounts both sides", sfA, sfB))
	target("find-10000-in-call/outside", fic, "<=", "1.1", sprintf("%d vs %d ns/op, 20 finds a call", ficA, ficB))
	figure("brokered-exec-no-sandbox/os-exec", ex, sprintf("--no-sandbox, %d vs %d ns/op", exA, exB))
	figure("proxied-mcp-tools/call/direct-go-sdk", mc, us(mcA) " vs " us(mcB))
	target("telemetry-on/off-collector-up", tel["up"], "<=", "1.1", "10,000 refused calls a round: " us(telA["up"]) " vs " us(telB["up"]) " a call")
	figure("telemetry-on/off-sandboxed-exec", tel["up-exec"], us(telA["up-exec"]) " vs " us(telB["up-exec"]) " a call of /bin/true, exporting to a running Jaeger")
	target("telemetry-on/off-collector-down", tel["down"], "<=", "1.1", us(telA["down"]) " vs " us(telB["down"]) " a call, " teld["down"] " spans dropped")
	target("redaction/io.Copy-throughput", red, ">=", "0.25", "8 values over 4 MiB, " ms(redA) " vs " ms(redB))
	# The gateway (issue 14): one more MCP hop, ≤ 1.15 for a tool that works.
	# The gateway's own cost (#31): against a bare go-sdk pass-through proxy.
	target("gateway-reserved/bare-proxy,an-instant-tool", gbr["helper"], "<=", "1.10", "the helper's echo, " us(gba["helper"]) " vs " us(gbb["helper"]))
	target("gateway-reserved/bare-proxy,server-everything", gbr["everything"], "<=", "1.10", "server-everything's echo, " us(gba["everything"]) " vs " us(gbb["everything"]))
	target("gateway-reserved/direct,a-2ms-tool", gw["UpstreamSlow"], "<=", "1.15", "the helper server, " us(gwa["UpstreamSlow"]) " vs " us(gwb["UpstreamSlow"]))
	figure("gateway-reserved/direct,an-instant-tool", gw["Upstream"], "the helper server, " us(gwa["Upstream"]) " vs " us(gwb["Upstream"]))
	figure("gateway-reserved/direct,server-everything", gw["Everything"], us(gwa["Everything"]) " vs " us(gwb["Everything"]))
	figure("gateway-exec/runtime.Session", gw["Exec"], ms(gwa["Exec"]) " vs " ms(gwb["Exec"]))
	# Scale (issue 11): time per MB at 100 MB against 1 MB, lint's memory.
	split("Parse Error Format/one-line Format/one-per-line Lint", jobs, " ")
	for (i = 1; i <= 5; i++) {
		a = scale[jobs[i] "/100MB"]; b = scale[jobs[i] "/1MB"]; c = scale[jobs[i] "/10MB"]
		if (a > 0 && b > 0)
			figure("time-per-MB-100MB/1MB," tolower(jobs[i]), f2(a / b), "10MB/1MB " f2(c / b) "; " b ", " c ", " a " ms/MB")
	}
	for (s = 10; s <= 100; s *= 10)
		if (rss["Lint/" s "MB"] > 0)
			target("lint-peak-RSS/input," s "MB", rss["Lint/" s "MB"], "<=", "20", "chock lint in a child process")
	# chock diff (issue 15).
	target("diff-10000-rules-one-edit,ms", dms["one-edit/rules=10000"], "<", "100", sprintf("%d regions compared", dreg["one-edit/rules=10000"]))
	figure("diff-10000-rules-default-changed,ms", dms["default/rules=10000"], sprintf("%d regions, every one", dreg["default/rules=10000"]))
	for (k = 1; k <= 16; k++)
		if (wms[k] > 0)
			figure("diff-worst-case,k=" k ",ms", wms[k], sprintf("%d rules, %d regions", wrules[k], wreg[k]) (wcap[k] > 0 ? ", stopped at the cap" : ""))
}
