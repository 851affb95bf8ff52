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
	fileRulesMarkdown(&b)
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

// fileRulesMarkdown renders how a path is written in fs.read.<PATH> and
// fs.write.<PATH>, how path patterns rank, and config.FileDefaults.
func fileRulesMarkdown(b *strings.Builder) {
	b.WriteString(`
## Files: fs.read and fs.write

**A path** is the rest of the action after ` + "`fs.read.` or `fs.write.`" + `, one segment that keeps its dots and slashes:

- absolute: ` + "`fs.read./etc/hosts`" + `;
- in the home folder (HOME of the calls): ` + "`fs.read.~/.aws/config`" + `, and ` + "`fs.read.~`" + ` for the folder itself;
- relative to the project's folder (where the session started), written without ` + "`./`" + `: ` + "`fs.write..git/hooks/pre-commit`" + ` is ` + "`.git/hooks/pre-commit`" + ` there (the first dot ends ` + "`fs.write`" + `, the second starts the path). A relative path names the same place under every ` + "`--writable`" + ` folder too, and ` + "`.git/…`" + ` names the git folders a worktree's ` + "`.git`" + ` file points to and every repository's ` + "`.git`" + ` below the project that the call's walk of it finds; ` + "`.git/hooks/…`" + ` also names the folder a repository's ` + "`core.hooksPath`" + ` names.

A path has no empty name, no ` + "`.` or `..`" + ` name and no '/' at its end; at most 4096 bytes.

**Globs**, in a pattern only, as gitignore uses them: ` + "`*`" + ` matches within one name (` + "`*.pem`, `.env.*`" + `), ` + "`**`" + ` as a whole name any number of names (` + "`**/.env`" + ` is ` + "`.env`" + ` in the project's folder or any folder below; ` + "`a/**/b`" + `; ` + "`~/.ssh/**`" + ` is everything inside ` + "`~/.ssh`" + `, not the folder itself). A pattern matches paths of its own form only: ` + "`**/.env`" + ` matches no ` + "`~/…`" + ` or absolute path. ` + "`?`, `[` and `]`" + ` are ordinary characters. ` + "`fs.read.*`" + ` (the path ` + "`*`" + ` alone) is every path, as a trailing ` + "`*`" + ` is in any namespace; ` + "`fs.*`" + ` is every file action.

**Ranking.** As for every action, the most specific matching rule of a layer decides: a literal path beats a glob, a glob with more literal characters (all but its ` + "`*`" + `s) beats one with fewer, and any glob beats ` + "`fs.read.*`" + `. Two globs of as many literal characters that both match tie as identical patterns do: deny beats ask beats allow. An ask is a refusal inside a call (nobody can be asked in the middle of one).

**A file is decided under every name it has** (its absolute path, its ` + "`~/`" + ` path, its path relative to the project and to each writable folder, and where a symlink leads), and the strictest decision wins: ` + "`allow fs.read./home/me/.aws/config`" + ` does not undo the default that denies ` + "`fs.read.~/.aws/**`" + ` (write ` + "`allow fs.read.~/.aws/config`" + `).

**No layer's ` + "`.default`" + ` decides files.** Every layer has a fallback rule per namespace, ` + "`allow fs.read.*`" + ` and ` + "`allow fs.write.*`" + `, that decides only where no rule of the layer matches: a call reads what its uid may, and writes inside the writable folders (the project's folder, the session's /tmp, ` + "`--writable`" + `), never outside them, whatever a rule says. An org denies for good: its deny caps the project's allow.

**The defaults.** chock adds these rules to the project's policy. A project rule as specific or more overrides one (` + "`allow fs.read.~/.aws/config`" + ` lets that file through; a rule of the same pattern wins the tie); a broader one does not (` + "`allow fs.*`" + ` leaves them). ` + "`chock explain`" + ` names one as ` + "`at chock's defaults`" + ` and ` + "`chock reach`" + ` prints what they leave.

| rule | decision | why |
|---|---|---|
`)
	for _, d := range config.FileDefaults {
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", cell(d.Pattern), d.Decision, cell(d.Why))
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
