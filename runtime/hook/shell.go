// Package hook decides a client's own tool calls (Claude Code's Bash and
// Edit, Codex's shell, Gemini CLI's run_shell_command) under the policy,
// for chock hook: what each tool call means as chock actions, and the
// answer in each client's own hook format. A shell command is read as
// bash reads it (mvdan.cc/sh/v3/syntax) and every program it would run,
// anywhere in it, is decided; what the text cannot tell is asked.
package hook

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"mvdan.cc/sh/v3/syntax"
)

// Shell is what a shell text runs, as far as the text says.
type Shell struct {
	// Programs are every simple command it would run, the wrappers (env,
	// xargs, find -exec, sh -c …) and what they run alike, in the order
	// they appear.
	Programs []Program
	// Writes are the files a redirection writes.
	Writes []string
	// Unknown says, one line each, what chock cannot decide from the text
	// (a command name from a variable, eval, a function defined in it, a
	// shell reading a script from its input or a file).
	Unknown []string

	funcs map[string]bool // functions the text defines
}

// Program is one simple command of the text: its argv[0], and the
// arguments after it as the rules with .args read them, a word the shell
// would expand (a variable, a glob, a substitution) and an argument added
// at run time (xargs's input, find's {}) being action.Unknown.
type Program struct {
	Name string
	Args []string
}

// programArgs are argv's arguments after argv[0], as Program has them.
func programArgs(argv []string, fixed []bool) []string {
	out := make([]string, 0, len(argv))
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !fixed[i] || strings.ContainsAny(a, "*?[") {
			a = action.Unknown
		}
		out = append(out, a)
	}
	return out
}

// builtinWrappers are bash builtins that run their arguments: what they
// run is decided, they are not programs themselves.
var builtinWrappers = map[string]bool{"exec": true, "command": true, "builtin": true}

// builtins are bash builtins that run no program: deciding them as
// programs would refuse cd.
var builtins = map[string]bool{
	"cd": true, "export": true, "set": true, "unset": true, "read": true, "local": true, "declare": true,
	"typeset": true, "readonly": true, "shift": true, "return": true, "exit": true, "break": true,
	"continue": true, "pushd": true, "popd": true, "dirs": true, "umask": true, "wait": true, "jobs": true,
	"fg": true, "bg": true, "getopts": true, "type": true, "shopt": true, "let": true,
	":": true, "test": true, "[": true, "disown": true, "suspend": true, "ulimit": true, "times": true,
}

// maxDepth bounds sh -c inside sh -c.
const maxDepth = 8

// ParseShell reads text as bash would and lists what it runs.
func ParseShell(text string) Shell {
	var s Shell
	s.parse(text, 0)
	return s
}

func (s *Shell) unknown(format string, args ...any) {
	s.Unknown = append(s.Unknown, fmt.Sprintf(format, args...))
}

func (s *Shell) parse(text string, depth int) {
	if depth > maxDepth {
		s.unknown("shell texts nested more than %d deep", maxDepth)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		s.unknown("the text does not parse as bash: %v", err)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			if s.funcs == nil {
				s.funcs = map[string]bool{}
			}
			s.funcs[fd.Name.Value] = true
		}
		return true
	})
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			s.call(n, depth)
		case *syntax.FuncDecl:
			s.unknown("a function is defined in the text, so what a name runs is not the program of that name")
		case *syntax.Redirect:
			s.redirect(n)
		case *syntax.CoprocClause:
			s.unknown("a coprocess")
		case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause:
			// Arithmetic evaluates the variables it names, recursively, and
			// an array subscript in their values runs $(...).
			t := text[n.Pos().Offset():n.End().Offset()]
			t = strings.TrimPrefix(strings.TrimPrefix(t, "$(("), "((")
			if strings.ContainsAny(t, "$`") || strings.IndexFunc(t, isNameRune) >= 0 {
				s.unknown("arithmetic on names or substitutions (a subscript in a value can run a command)")
			}
		case *syntax.DeclClause, *syntax.TestClause:
			if t := text[n.Pos().Offset():n.End().Offset()]; strings.Contains(t, "[") && strings.ContainsAny(t, "$`") || strings.Contains(t, "-v") {
				s.unknown("a subscript or -v test the shell evaluates (it can run a command)")
			}
		case *syntax.Assign:
			if n.Name != nil && codeVars(n.Name.Value) {
				s.unknown("it sets %s, which changes what a later program runs", n.Name.Value)
			}
		}
		return true
	})
}

func isNameRune(r rune) bool { return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// codeVars says whether setting variable name changes which code a
// program runs (the search path, a preloaded library, a shell's startup
// file, a pager or editor a program starts).
func codeVars(name string) bool {
	switch name {
	case "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH",
		"GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_ASKPASS", "GIT_EXEC_PATH",
		"PAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "BROWSER",
		"PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB",
		"RUBYOPT", "RUBYLIB", "GOFLAGS", "CC", "CXX", "LDFLAGS", "MAKEFLAGS":
		return true
	}
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "GIT_CONFIG")
}

// literal is w's value when the text fixes it (literals and quotes only,
// no expansion), and whether it does.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	if len(w.Parts) > 1 {
		for _, p := range w.Parts {
			// A brace among quoted parts ({"push",}, {pu"",}sh) is a
			// brace expansion all the same: not fixed.
			if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "{}") {
				return "", false
			}
		}
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			// An unquoted glob or brace is expanded by the shell (over
			// files anyone may have named): not fixed. {} alone stays.
			if !escapedAll(v) {
				return "", false
			}
			b.WriteString(unescape(v, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false // $'…' escapes: not worth reading as the shell would
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(l.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// escapedAll says whether the shell would expand nothing in v: every glob
// character escaped, and no brace holding a comma or "..".
func escapedAll(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return false
		case '{':
			if end := strings.IndexByte(v[i:], '}'); end > 0 && strings.ContainsAny(v[i:i+end], ",") || end > 0 && strings.Contains(v[i:i+end], "..") {
				return false
			}
		}
	}
	return true
}

// unescape takes away the backslashes the shell takes away: every one
// outside quotes, and inside double quotes those before $ ` " \ and a
// line end.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			next := s[i+1]
			switch {
			case next == '\n':
				i++
				continue
			case !dquoted || strings.IndexByte("$`\"\\", next) >= 0:
				b.WriteByte(next)
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (s *Shell) redirect(r *syntax.Redirect) {
	if r.Word != nil {
		if w, ok := literal(r.Word); ok && (strings.HasPrefix(w, "/dev/tcp/") || strings.HasPrefix(w, "/dev/udp/")) {
			s.unknown("a redirection to %s, a network connection", w)
			return
		}
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.ClbOut, syntax.RdrInOut:
	case syntax.DplOut:
		if w, ok := literal(r.Word); ok && (w == "-" || strings.Trim(w, "0123456789") == "") {
			return // 2>&1, >&-: a descriptor, not a file
		}
	default:
		return
	}
	w, ok := literal(r.Word)
	switch {
	case !ok:
		s.unknown("a redirection to a file named by an expansion")
	case w == "/dev/null" || w == "/dev/stdout" || w == "/dev/stderr":
	default:
		s.Writes = append(s.Writes, w)
	}
}

// call lists the program a simple command runs, and what a wrapper runs.
func (s *Shell) call(c *syntax.CallExpr, depth int) {
	if len(c.Args) == 0 {
		return // assignments only; their substitutions are walked
	}
	argv := make([]string, len(c.Args))
	fixed := make([]bool, len(c.Args))
	for i, w := range c.Args {
		argv[i], fixed[i] = literal(w)
	}
	s.argv(argv, fixed, depth)
}

// argv lists argv[0] and, for a wrapper, what it runs.
func (s *Shell) argv(argv []string, fixed []bool, depth int) {
	if len(argv) == 0 {
		return
	}
	if !fixed[0] {
		s.unknown("a command name from a variable or a substitution")
		return
	}
	name := argv[0]
	if name == "" || strings.ContainsAny(name, "*?[{") {
		s.unknown("a command name %q that the shell would expand", name)
		return
	}
	base := path.Base(name)
	switch {
	case name == "eval" || name == "source" || name == "." || name == "alias" || name == "trap" || name == "fc":
		s.unknown("%s runs text chock cannot read", name)
		return
	case s.funcs[name]:
		return // a function the text defines: asked already
	case (name == "test" || name == "[") && slices.Contains(argv, "-v"):
		s.unknown("test -v evaluates a subscript (it can run a command)")
		return
	case builtins[name]:
		return // a builtin that runs no program
	}
	if !builtinWrappers[name] {
		s.Programs = append(s.Programs, Program{Name: name, Args: programArgs(argv, fixed)})
	}
	if strings.Contains(name, "/") {
		s.unknown("%s names a file by its path, which the text cannot show is the program its name means (chock hook --sandbox checks it)", name)
	}
	switch base {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash":
		s.shell(base, argv[1:], fixed[1:], depth)
		return
	case "find":
		s.find(argv[1:], fixed[1:], depth)
		return
	case "busybox":
		s.argv(argv[1:], fixed[1:], depth)
		return
	case "watch":
		i := skipOptions(argv, fixed, 1, wrapperOf["watch"])
		if i < len(argv) {
			s.parseJoined(argv[i:], fixed[i:], depth)
		}
		return
	case "flock":
		s.flock(argv, fixed, depth)
		return
	}
	w, ok := wrapperOf[base]
	if !ok {
		return
	}
	i := skipOptions(argv, fixed, 1, w)
	for j := i; j < i+w.positional+1 && j < len(argv); j++ {
		if !fixed[j] {
			s.unknown("%s with an argument the shell expands, so what it runs is not in the text", base)
			return
		}
	}
	for j := 1; j < i; j++ {
		if name, _, ok := strings.Cut(argv[j], "="); ok && w.assigns && !strings.HasPrefix(argv[j], "-") && codeVars(name) {
			s.unknown("%s sets %s, which changes what the program runs", base, name)
		}
	}
	if w.shellOpt != "" {
		for j := 1; j < i; j++ {
			a := argv[j]
			short := strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, w.shellOpt[1:])
			if short || strings.HasPrefix(a, "--s") {
				s.unknown("%s %s runs a command line chock cannot read", base, a)
			}
		}
	}
	i += w.positional
	renamed := false // exec -a NAME runs the program under another argv[0]
	for j := 1; j < i && j < len(argv) && base == "exec"; j++ {
		renamed = renamed || strings.HasPrefix(argv[j], "-") && !strings.HasPrefix(argv[j], "--") && strings.Contains(argv[j], "a")
	}
	if renamed {
		before := len(s.Programs)
		defer func() {
			if len(s.Programs) > before {
				// It picks what it does from that name (git-push is git push).
				p := &s.Programs[before]
				p.Args = append([]string{action.Unknown}, p.Args...)
			}
		}()
	}
	switch {
	case i < len(argv) && base == "xargs":
		// What it runs is given more arguments from its input.
		s.argv(append(slices.Clone(argv[i:]), action.Unknown), append(slices.Clone(fixed[i:]), false), depth)
	case i < len(argv):
		s.argv(argv[i:], fixed[i:], depth)
	case base == "xargs":
		s.Programs = append(s.Programs, Program{Name: "echo", Args: []string{action.Unknown}})
	case base == "sudo" || base == "doas":
		s.unknown("%s with no command runs a shell", base)
	}
}

// wrapper is a program that runs its argument as a command: which of its
// options take a value, and how many arguments come before the command.
type wrapper struct {
	valued     string   // short options that take a value
	long       []string // long options that take a value (without =)
	positional int      // arguments before the command (timeout's DURATION)
	assigns    bool     // NAME=VALUE arguments before the command (env)
	shellOpt   string   // an option that takes a command line (env -S)
}

// wrapperOf are the wrappers chock reads through: the wrapper is decided,
// and so is what it runs.
var wrapperOf = map[string]wrapper{
	"env":     {valued: "uCS", long: []string{"--unset", "--chdir", "--split-string"}, assigns: true, shellOpt: "-S"},
	"timeout": {valued: "sk", long: []string{"--signal", "--kill-after"}, positional: 1},
	"nice":    {valued: "n", long: []string{"--adjustment"}},
	"nohup":   {},
	"time":    {valued: "fo", long: []string{"--format", "--output"}},
	"command": {},
	"builtin": {},
	"exec":    {valued: "a"},
	"setsid":  {},
	"stdbuf":  {valued: "ioe", long: []string{"--input", "--output", "--error"}},
	"sudo":    {valued: "ugCDhprTUtR", long: []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user"}},
	"doas":    {valued: "uC"},
	"xargs":   {valued: "ILnPdsaE", long: []string{"--max-args", "--max-procs", "--delimiter", "--arg-file", "--max-chars"}},
	"watch":   {valued: "nq", long: []string{"--interval"}},
	"chrt":    {positional: 1},
	"ionice":  {valued: "cnp", long: []string{"--class", "--classdata", "--pid"}},
	"taskset": {positional: 1},
}

// skipOptions is the index of the first argument after i that is not an
// option of w (or its value, or a NAME=VALUE where w takes those).
func skipOptions(argv []string, fixed []bool, i int, w wrapper) int {
	for i < len(argv) {
		a := argv[i]
		switch {
		case !fixed[i]:
			return i
		case a == "--":
			return i + 1
		case w.assigns && strings.Contains(a, "=") && !strings.HasPrefix(a, "-"):
			i++
		case strings.HasPrefix(a, "--"):
			i++
			for _, l := range w.long {
				if a == l {
					i++ // its value follows
				}
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			i++
			// -n5 carries its value; -n takes the next argument.
			// -la NAME: a cluster of flags whose last takes a value.
			if last := a[len(a)-1:]; strings.Contains(w.valued, last) {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// shell reads a shell's arguments: -c SCRIPT is read as text; a shell
// reading its script from a file or its input cannot be read.
func (s *Shell) shell(name string, args []string, fixed []bool, depth int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !fixed[i] {
			s.unknown("%s with arguments from an expansion", name)
			return
		}
		switch {
		case a == "-c" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], "c"):
			if i+1 >= len(args) {
				s.unknown("%s -c with no command", name)
				return
			}
			if !fixed[i+1] {
				s.unknown("%s -c with a script from an expansion", name)
				return
			}
			s.parse(args[i+1], depth+1)
			return
		case a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++ // the option's name
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
		default:
			s.unknown("%s runs the script %q, which chock cannot read from the text", name, a)
			return
		}
	}
	s.unknown("%s reads its commands from its input", name)
}

// find lists what -exec, -execdir, -ok and -okdir run.
func (s *Shell) find(args []string, fixed []bool, depth int) {
	for i := 0; i < len(args); i++ {
		if !fixed[i] {
			s.unknown("find with an argument the shell expands (it could be -exec)")
			return
		}
		switch args[i] {
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			s.unknown("find %s deletes or writes files", args[i])
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && !(fixed[j] && (args[j] == ";" || args[j] == "+")) {
				j++
			}
			// {} is each file found: an argument known only at run time.
			cmd, known := slices.Clone(args[i+1:j]), slices.Clone(fixed[i+1:j])
			for k := 1; k < len(cmd); k++ {
				known[k] = known[k] && !strings.Contains(cmd[k], "{}")
			}
			s.argv(cmd, known, depth)
			i = j
		}
	}
}

// flock runs flock [options] FILE COMMAND…, or -c COMMAND as a shell line.
func (s *Shell) flock(argv []string, fixed []bool, depth int) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case !fixed[i]:
			s.unknown("flock with arguments from an expansion")
			return
		case a == "-c" || a == "--command":
			if i+1 < len(argv) && fixed[i+1] {
				s.parse(argv[i+1], depth+1)
			} else {
				s.unknown("flock -c with a command from an expansion")
			}
			return
		case a == "-w" || a == "--timeout" || a == "-E" || a == "--conflict-exit-code":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			// the lock file, then the command
			if i+1 < len(argv) {
				s.argv(argv[i+1:], fixed[i+1:], depth)
			}
			return
		}
	}
}

// parseJoined reads arguments a program joins into one shell line (watch).
func (s *Shell) parseJoined(args []string, fixed []bool, depth int) {
	for _, f := range fixed {
		if !f {
			s.unknown("a command line from an expansion")
			return
		}
	}
	s.parse(strings.Join(args, " "), depth+1)
}
