# Prints the ratios make bench reports, from `go test -bench` output.
function value(unit,   i) {
	for (i = 1; i < NF; i++) if ($(i + 1) == unit) return $i
	return ""
}
function name(   n) {
	n = $1
	sub(/-[0-9]+$/, "", n)
	return n
}
/^BenchmarkParse\// { n = name(); sub(/^BenchmarkParse\//, "", n); zon[n] = value("MB/s") }
/^BenchmarkJSONDecode\// { n = name(); sub(/^BenchmarkJSONDecode\//, "", n); js[n] = value("MB/s") }
/^BenchmarkDecision\// { n = name(); sub(/^BenchmarkDecision\//, "", n); dec[n] = value("ns/op") }
/^BenchmarkExecTrue\// { n = name(); sub(/^BenchmarkExecTrue\//, "", n); ex[n] = value("ns/op") }
/^BenchmarkSandboxExec/ { sbw = value("brokered/bwrap"); sex = value("brokered/os-exec"); sb = value("brokered-ns/op"); bw = value("bwrap-ns/op"); oe = value("os-exec-ns/op") }
/^BenchmarkMCPCall\// { n = name(); sub(/^BenchmarkMCPCall\//, "", n); mc[n] = value("ns/op") }
/^BenchmarkGatewayExec/ { gw["Exec"] = value("ratio"); gwa["Exec"] = value("gateway-ns/call"); gwb["Exec"] = value("session-ns/call") }
/^BenchmarkGateway(Upstream|UpstreamSlow|Everything)-/ { n = name(); sub(/^BenchmarkGateway/, "", n); gw[n] = value("ratio"); gwa[n] = value("reserved-ns/call"); gwb[n] = value("direct-ns/call") }
/^BenchmarkRedact/ { red = value("MB/s") }
/^BenchmarkCopy/ { cp = value("MB/s") }
/^BenchmarkEngineDecide\// { n = name(); sub(/^BenchmarkEngineDecide\//, "", n); eng[n] = value("decisions/s") }
/^BenchmarkScale[A-Za-z]+\// { n = name(); sub(/^BenchmarkScale/, "", n); scale[n] = value("ms/MB"); rss[n] = value("peak-RSS/input") }
/^BenchmarkDiff\// { n = name(); sub(/^BenchmarkDiff\//, "", n); dms[n] = value("ms/diff"); dreg[n] = value("regions") }
/^BenchmarkDiffWorst\// { n = name(); sub(/^BenchmarkDiffWorst\/k=/, "", n); wms[n] = value("ms/diff"); wreg[n] = value("regions"); wrules[n] = value("rules"); wcap[n] = value("capped") }
END {
	for (k in zon) if (js[k] > 0)
		printf "ratio ZON/JSON throughput %-62s %.2f (%s vs %s MB/s)\n", k, zon[k] / js[k], zon[k], js[k]
	split("opa native", engines, " ")
	for (i = 1; i <= 2; i++) {
		a = dec[engines[i] "/rules=10000"]; b = dec[engines[i] "/rules=10"]
		if (a > 0 && b > 0)
			printf "ratio decision %s 10000/10 rules %.2f (%s vs %s ns/op)\n", engines[i], a / b, a, b
	}
	for (k in eng)
		printf "eval.Engine decisions per second, %s: %d\n", k, eng[k]
	if (ex["os-exec"] > 0)
		printf "ratio brokered exec of /bin/true / os/exec %.2f (%s vs %s ns/op)\n", ex["brokered"] / ex["os-exec"], ex["brokered"], ex["os-exec"]
	if (sbw > 0) {
		printf "ratio sandboxed-exec/bwrap %.2f target <= 1.2 %s (%d vs %d ns/op, median of interleaved rounds)\n", sbw, (sbw <= 1.2 ? "ok" : "MISS"), sb, bw
		printf "ratio sandboxed-exec/os-exec %.2f (report only; %d vs %d ns/op)\n", sex, sb, oe
	}
	if (mc["direct"] > 0)
		printf "ratio proxied MCP tools/call / direct go-sdk call %.2f (%s vs %s ns/op)\n", mc["proxied"] / mc["direct"], mc["proxied"], mc["direct"]
	if (gw["Exec"] > 0)
		printf "ratio gateway tools/call exec /bin/true / runtime.Session in process %.2f (%s vs %s ns/call)\n", gw["Exec"], gwa["Exec"], gwb["Exec"]
	if (gw["Upstream"] > 0)
		printf "ratio gateway re-served server tool / direct go-sdk call, helper server %.2f (%s vs %s ns/call)\n", gw["Upstream"], gwa["Upstream"], gwb["Upstream"]
	if (gw["UpstreamSlow"] > 0)
		printf "ratio gateway re-served server tool / direct go-sdk call, helper server, a 2 ms tool %.2f (%s vs %s ns/call)\n", gw["UpstreamSlow"], gwa["UpstreamSlow"], gwb["UpstreamSlow"]
	if (gw["Everything"] > 0)
		printf "ratio gateway re-served server tool / direct go-sdk call, server-everything %.2f (%s vs %s ns/call)\n", gw["Everything"], gwa["Everything"], gwb["Everything"]
	if (cp > 0)
		printf "ratio redaction with 8 values / io.Copy throughput %.2f (%s vs %s MB/s)\n", red / cp, red, cp
	# Linear work costs the same per MB at every size.
	split("Parse Error Format/one-line Format/one-per-line Lint", jobs, " ")
	for (i = 1; i <= 5; i++) {
		a = scale[jobs[i] "/100MB"]; b = scale[jobs[i] "/1MB"]; c = scale[jobs[i] "/10MB"]
		if (a > 0 && b > 0)
			printf "ratio %s time per MB 100MB/1MB %.2f, 10MB/1MB %.2f (%s, %s, %s ms/MB)\n", tolower(jobs[i]), a / b, c / b, b, c, a
	}
	for (s = 1; s <= 100; s *= 10) {
		a = scale["Format/one-line/" s "MB"]; b = scale["Format/one-per-line/" s "MB"]
		if (a > 0 && b > 0)
			printf "ratio fmt rules on one line / one a line, time per MB at %dMB %.2f (%s vs %s ms/MB)\n", s, a / b, a, b
	}
	for (s = 10; s <= 100; s *= 10)
		if (rss["Lint/" s "MB"] > 0)
			printf "lint peak RSS / input at %dMB: %s (at most 20)\n", s, rss["Lint/" s "MB"]
	if (dms["one-edit/rules=10000"] > 0)
		printf "diff of a 10000-rule policy with one edit: %.1f ms (target under 100 ms), %d regions compared\n", dms["one-edit/rules=10000"], dreg["one-edit/rules=10000"]
	if (dms["default/rules=10000"] > 0)
		printf "diff of a 10000-rule policy with its default changed (every region): %.1f ms, %d regions\n", dms["default/rules=10000"], dreg["default/rules=10000"]
	for (k = 1; k <= 16; k++)
		if (wms[k] > 0)
			printf "diff worst case, k=%d positions (%d rules): %d regions%s in %.2f ms\n", k, wrules[k], wreg[k], (wcap[k] > 0 ? ", stopped at the cap" : ""), wms[k]
}
