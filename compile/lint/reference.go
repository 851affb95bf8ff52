package lint

import (
	"fmt"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
)

// ReferenceMarkdown renders config.Reference as docs/chock-zon.md, each
// lint code a link to its group in docs/lint.md.
func ReferenceMarkdown() string {
	var b strings.Builder
	b.WriteString("# chock.zon and org.zon: every field\n\n")
	b.WriteString("Generated from the field tables of `compile/config/blocks.go` and the namespace table of `compile/action/namespace.go` by `UPDATE_GOLDEN=1 go test ./compile/lint -run TestReference`; do not edit by hand. ")
	b.WriteString("A test fails when the decoder reads a field this page lacks, or a code here is not one `chock lint` reports.\n\n")
	b.WriteString("Both files are ZON, as Zig's `std.zon` reads it. Enumerated values (decisions, `.bind`, `.phase`, `.store`) are written as enum literals (`.allow`) or strings (`\"allow\"`). ")
	b.WriteString("An action is a dot-separated name (`exec.path.gh`, `mcp.notion.tool.search`, `net.fetch.com.github`: hosts are written last label first); a pattern is an action whose segments may be `*`, one segment inside the pattern, one or more at its end. ")
	b.WriteString("`chock init` writes a commented starting file; the checks named in the last column are in [docs/lint.md](lint.md).\n")
	file := ""
	for _, blk := range config.Reference {
		if blk.File != file {
			file = blk.File
			fmt.Fprintf(&b, "\n## %s\n", file)
		}
		title := blk.File
		if blk.Path != "" {
			title = "." + strings.ReplaceAll(blk.Path, "[]", "[i]")
			fmt.Fprintf(&b, "\n### `%s` in %s\n", title, blk.File)
		}
		fmt.Fprintf(&b, "\n%s\n\n", blk.Summary)
		b.WriteString("| field | type | default | example | what | checks |\n|---|---|---|---|---|---|\n")
		for _, f := range blk.Fields {
			fmt.Fprintf(&b, "| `.%s` | %s | %s | `%s` | %s | %s |\n", f.Name, cell(f.Type), zonCell(f.Default), cell(f.Example), cell(f.Summary), codeLinks(f.Codes))
		}
		if len(blk.Codes) > 0 {
			fmt.Fprintf(&b, "\nChecks of the %s as a whole: %s.\n", map[bool]string{true: "file", false: "block"}[blk.Path == ""], codeLinks(blk.Codes))
		}
		fmt.Fprintf(&b, "\n```zig\n%s\n```\n", blk.Example)
	}
	namespaceMarkdown(&b)
	return b.String()
}

// namespaceMarkdown renders action.Namespaces: every family of actions a
// rule may name.
func namespaceMarkdown(b *strings.Builder) {
	b.WriteString("\n## Action namespaces\n\nEvery action a rule names is in one of these (`unknown-namespace` warns of a pattern in none). ")
	b.WriteString("A placeholder inside a namespace is one segment; one at its end is one or more. An action decided at start is decided when the session starts, when nobody can be asked, so an ask reads as deny.\n\n")
	b.WriteString("| namespace | decided | what |\n|---|---|---|\n")
	for _, n := range action.Namespaces {
		when := "at each call"
		if n.Start {
			when = "at start"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", n.Form, when, cell(n.Doc))
	}
}

// zonCell is a default: in a code span when it is a ZON value.
func zonCell(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, `"`) {
		return "`" + cell(s) + "`"
	}
	return cell(s)
}

// cell escapes a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// codeLinks writes each code as a link to its group of docs/lint.md.
func codeLinks(codes []string) string {
	out := make([]string, 0, len(codes))
	for _, c := range codes {
		group := ""
		if chk, ok := CheckFor(c); ok {
			group = chk.Group
		}
		out = append(out, fmt.Sprintf("[`%s`](lint.md#%s)", c, group))
	}
	return strings.Join(out, ", ")
}
