// Package benchgen makes the generated policies chock's benchmarks and
// scale tests share: a project of n rules in chock's own namespaces, org
// ceilings, a fixed workload of actions, and the minimal hand-written OPA
// policy a decision is measured against.
package benchgen

import (
	"fmt"
	"strings"
)

var decisions = []string{"allow", "ask", "deny"}

// pattern is rule i of a generated policy: literal programs, tools of many
// servers, host prefixes and tool wildcards, in equal parts.
func pattern(i int) string {
	switch i % 4 {
	case 0:
		return fmt.Sprintf("exec.path.tool%d", i)
	case 1:
		return fmt.Sprintf("mcp.server%d.tool.op%d", i%40, i)
	case 2:
		return fmt.Sprintf("net.fetch.com.example%d.*", i)
	}
	return fmt.Sprintf("mcp.*.tool.op%d", i)
}

// Policy is a project chock.zon of n rules.
func Policy(n int) string {
	var b strings.Builder
	b.WriteString(".{ .policy = .{ .rules = .{\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "    .{ .action = %q, .decision = .%s },\n", pattern(i), decisions[i%3])
	}
	b.WriteString("} } }\n")
	return b.String()
}

// Org is an org.zon named name of n rules over the project's patterns
// (every seventh, from offset on), deciding otherwise than the project,
// with the default allow.
func Org(name string, n, offset int) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".{ .name = %q, .policy = .{ .default = .allow, .rules = .{\n", name)
	for k := 0; k < n; k++ {
		i := offset + 7*k
		fmt.Fprintf(&b, "    .{ .action = %q, .decision = .%s },\n", pattern(i), decisions[(i+1)%3])
	}
	b.WriteString("} } }\n")
	return b.String()
}

// Actions is a fixed workload of 200 actions for a policy of n rules:
// exact hits, wildcard hits and misses.
func Actions(n int) []string {
	var out []string
	for i := 0; i < 200; i++ {
		k := (i * 7919) % n
		switch i % 5 {
		case 0:
			out = append(out, fmt.Sprintf("exec.path.tool%d", k-k%4))
		case 1:
			out = append(out, fmt.Sprintf("mcp.server%d.tool.op%d", (k-k%4+1)%40, k-k%4+1))
		case 2:
			out = append(out, fmt.Sprintf("net.fetch.com.example%d.www", k-k%4+2))
		case 3:
			out = append(out, fmt.Sprintf("mcp.s%d.tool.op%d", i, k-k%4+3))
		default:
			out = append(out, fmt.Sprintf("exec.path.missing%d", i))
		}
	}
	return out
}

// Minimal is the minimal hand-written OPA policy doing the same matching
// as Policy(n), as the performance notes define it: package min, one rule
// per pattern with the condition chock writes for it and the head
// [specificity key, rank, order], and decision the smallest head, or the
// default. Query data.min.decision with input {"action": "..."}.
func Minimal(n int) string {
	var b strings.Builder
	b.WriteString("package min\n\nimport rego.v1\n\ndefault decision := [\"9\", 0, -1]\n\ndecision := min(matched)\n\n")
	ranks := map[string]int{"deny": 0, "ask": 1, "allow": 2}
	for i := 0; i < n; i++ {
		p := pattern(i)
		var key, cond string
		switch i % 4 {
		case 0, 1:
			key = strings.Repeat("0", strings.Count(p, ".")+1) + "9"
			cond = fmt.Sprintf("input.action == %q", p)
		case 2:
			key = "000029"
			cond = fmt.Sprintf("startswith(input.action, %q)", strings.TrimSuffix(p, "*"))
		default:
			key = "01009"
			cond = fmt.Sprintf("glob.match(%q, [\".\"], input.action)", p)
		}
		fmt.Fprintf(&b, "matched contains [%q, %d, %d] if %s\n\n", key, ranks[decisions[i%3]], i, cond)
	}
	return b.String()
}
