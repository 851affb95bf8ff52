package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/chockhq/chock/runtime/telemetry"
)

// execRights is what the policy lets any process of a call execute, for
// one policy revision: the files, each with the name and decision that
// let it, and the directories mounted read-only.
type execRights struct {
	revision string
	// files are the executable files: every file a name allowed at loop
	// phase means, and the ELF interpreters they need.
	files []string
	// by is each known program file's verdict: the name that allows it
	// (or the first that refuses it) and that decision.
	by map[sandbox.FileID]verdict
	// dirs are mounted read-only in every call: the PATH's directories,
	// and those of files symlinks on it lead to.
	dirs []string
	// runs are the identities of files: what the kernel lets run.
	runs map[sandbox.FileID]bool
	// ids are the files' identities, each program's as the session's PATH
	// scan found it when the session started: the init grants execution
	// to what each path opens only while it is that file.
	ids map[string]sandbox.FileID
	// interps are the ELF interpreters among files that no allowed name
	// means (ld.so): the kernel loads them for a program, but an execve
	// naming one is refused (sandbox.Spec.Interpreters).
	interps map[string]bool
	// scripts are the #! interpreters of the scripts one call's program
	// declares (.calls): in a call that holds a secret they run only as
	// those scripts' interpreters, never exec'd themselves.
	scripts []string
}

type verdict struct {
	name     string
	decision *eval.Decision
	// declared names the .programs entry that declared the call, when a
	// declaration let it run.
	declared string
}

// rightsCache holds the execRights of the engine's current revision.
type rightsCache struct {
	mu sync.Mutex
	r  *execRights
}

// rights are the exec rights under the engine's current revision, worked
// out once per revision: a decision for every program name on the PATH.
func (s *Session) rights(ctx context.Context) (*execRights, error) {
	rev := s.engine(ctx).Revision()
	s.execRights.mu.Lock()
	defer s.execRights.mu.Unlock()
	if r := s.execRights.r; r != nil && r.revision == rev {
		return r, nil
	}
	r := &execRights{revision: rev, by: map[sandbox.FileID]verdict{}}
	dirs := map[string]bool{}
	for _, d := range s.programs.Dirs {
		dirs[d] = true
	}
	files := map[string]bool{}
	r.ids = map[string]sandbox.FileID{}
	var names, acts []string
	for _, name := range s.programs.Names() {
		act, err := action.Exec(name)
		if err != nil || strings.Contains(name, "/") || s.holdsSecret(act) {
			continue // a name that cannot form an action, or holds a secret's value, is never allowed
		}
		names, acts = append(names, name), append(acts, act)
	}
	// One query for them all: a remote OPA is a round trip away.
	ds, err := s.engine(ctx).DecideManyUnlogged(ctx, acts, config.Loop)
	if err != nil {
		return nil, err
	}
	// A file is decided under every name that means it (sh and dash, where
	// /usr/bin/sh is dash): a rule that denies or asks one of its names
	// wins over one that allows another. A name no rule decides (the
	// default) does not count against an allowed one.
	allowed, refused, first := map[sandbox.FileID]verdict{}, map[sandbox.FileID]verdict{}, map[sandbox.FileID]verdict{}
	paths := map[sandbox.FileID]string{}
	for i, name := range names {
		d := ds[i]
		for _, f := range s.programs.Means(name) {
			v := verdict{name: name, decision: d}
			if _, ok := paths[f.ID]; !ok {
				paths[f.ID], first[f.ID] = f.Path, v
			}
			if _, ok := allowed[f.ID]; !ok && d.Decision == config.Allow {
				allowed[f.ID] = v
			}
			if _, ok := refused[f.ID]; !ok && namedRefusal(d) {
				refused[f.ID] = v
			}
		}
	}
	for id, path := range paths {
		switch v, ok := refused[id]; {
		case ok:
			r.by[id] = v
		case allowed[id].decision != nil:
			r.by[id] = allowed[id]
			files[path] = true
			r.ids[path] = id
			dirs[filepath.Dir(path)] = true
			if interp, script, err := sandbox.Interpreter(path); err == nil && !script && interp != "" {
				files[interp] = true
			}
		default:
			r.by[id] = first[id]
		}
	}
	r.files = slices.Sorted(maps.Keys(files))
	r.dirs = slices.Sorted(maps.Keys(dirs))
	r.runs = map[sandbox.FileID]bool{}
	r.interps = map[string]bool{}
	for _, p := range r.files {
		id, ok := r.ids[p]
		if !ok {
			// An ELF interpreter: identified now, and pinned from now.
			var err error
			if id, err = sandbox.Identify(p); err != nil {
				continue
			}
			r.ids[p] = id
			if v, named := r.by[id]; !named || v.decision.Decision != config.Allow {
				r.interps[p] = true
			}
		}
		r.runs[id] = true
	}
	s.execRights.r = r
	return r, nil
}

// namedRefusal says whether a rule (not a layer's default) denies or asks
// the action d decided, in the decision that stands.
func namedRefusal(d *eval.Decision) bool {
	if d.Decision == config.Allow {
		return false
	}
	for _, l := range d.Layers {
		if !l.Default && l.Rule != nil && l.Decision != config.Allow {
			return true
		}
	}
	return false
}

// otherName refuses a call whose program file another of its names
// refuses by a rule: the strictest decision of the file's names wins.
func (s *Session) otherName(ctx context.Context, c *Call) error {
	rights, err := s.rights(ctx)
	if err != nil {
		return err
	}
	v, ok := rights.by[c.prog.File.ID]
	if !ok || v.decision.Decision == config.Allow || v.name == c.prog.Name || !namedRefusal(v.decision) {
		return nil
	}
	rule := "default"
	if l := v.decision.Decider(); l != nil {
		rule = l.Spelling() + " " + l.RuleText()
	}
	return &RefusedError{Action: c.Action, Reason: fmt.Sprintf("%s is also exec.path.%s, which is %s (%s): a file is decided under every name that means it, and the strictest decision wins",
		c.prog.File.Path, v.name, v.decision.Decision, rule)}
}

// testAfterPlan, when a test sets it, runs between a call's file plan
// and its sandbox's start: where another process changes the file system.
var testAfterPlan func()

// maxReplans bounds how often a call is planned again when the file
// system changed between its plan and its sandbox's mounts.
const maxReplans = 2

// started builds the call's process, lets setup give it its input and
// output, and starts it. A sandbox the file system outran (a folder the
// plan protects gone or replaced before the mount: another chock
// process's placeholder removed as its session ends) is planned again, up
// to maxReplans times; then the call is refused.
func (s *Session) started(ctx context.Context, c *Call, env []string, setup func(*exec.Cmd)) (*exec.Cmd, error) {
	for try := 0; ; try++ {
		cmd, start, err := s.command(ctx, c, env)
		if err != nil {
			return nil, err
		}
		setup(cmd)
		err = start()
		var r *RefusedError
		if errors.As(err, &r) && r.stale && try < maxReplans {
			continue
		}
		return cmd, err
	}
}

// command builds the call's process: in a sandbox, or with --no-sandbox
// bare in a process group of its own. start starts it.
func (s *Session) command(ctx context.Context, c *Call, env []string) (*exec.Cmd, func() error, error) {
	r := c.Exec
	prog := c.prog.File.Path
	if err := s.otherName(ctx, c); err != nil {
		return nil, nil, err
	}
	if s.opts.NoSandbox {
		cmd := exec.Command(prog, r.Argv[1:]...)
		cmd.Args[0] = r.Argv[0]
		cmd.Env = env
		cmd.Dir = r.Dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd, cmd.Start, nil
	}
	rights, err := s.rights(ctx)
	if err != nil {
		return nil, nil, err
	}
	switch id, err := sandbox.Identify(s.initPath); {
	case err != nil:
		return nil, nil, &RefusedError{Action: c.Action, Reason: fmt.Sprintf("the sandbox could not be made (init %s: %v); the call was not run (--no-sandbox runs calls without one, for a person who says so)", s.initPath, err)}
	case id != s.initID:
		return nil, nil, &RefusedError{Action: c.Action, Reason: fmt.Sprintf("the sandbox init %s is not the file the session started with, so no sandbox is made with it; the call was not run", s.initPath)}
	}
	// The file must still be the one the session resolved: a folder above
	// it moved and another put in its place is not the program.
	if id, err := sandbox.Identify(prog); err != nil || id != c.prog.File.ID {
		return nil, nil, &RefusedError{Action: c.Action, Reason: fmt.Sprintf("%s is not the file exec.path.%s meant when the session started", prog, c.prog.Name)}
	}
	allow := append([]string{prog}, rights.files...)
	interp, script, err := sandbox.Interpreter(prog)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", prog, err)
	}
	// own are the files the call's own program needs to run: itself, and
	// the interpreter its #! line or PT_INTERP names.
	own := []string{prog}
	var bare []string
	scriptInterp := "" // the program's #! interpreter, when it is a script
	switch {
	case script:
		// A script runs its interpreter, which the policy must let run too:
		// allowing a script does not allow every program it could name.
		id, err := sandbox.Identify(interp)
		v, known := rights.by[id]
		if err != nil || !known || v.decision.Decision != config.Allow {
			why := fmt.Sprintf("%s is a script run by %s, which no allowed program name means", prog, interp)
			if names := s.programs.NamesOf(id); err == nil && len(names) > 0 {
				why = fmt.Sprintf("%s is a script run by %s, and the policy does not allow exec.path.%s", prog, interp, names[0])
			}
			return nil, nil, &RefusedError{Action: c.Action, Reason: why}
		}
		own = append(own, interp)
		scriptInterp = interp
		// And the ELF interpreter that one needs (python3's ld.so).
		if elf, sub, err := sandbox.Interpreter(interp); err == nil && !sub && elf != "" {
			own = append(own, elf)
		}
	case interp != "":
		allow = append(allow, interp)
		own = append(own, interp)
		if _, known := rights.ids[interp]; !known {
			bare = append(bare, interp) // no allowed name means it, nor does any program's interpreter
		}
	}
	base := len(allow)
	rights, allow, err = s.declaredCalls(ctx, c.prog.Name, rights, allow)
	if err != nil {
		return nil, nil, err
	}
	// What it declares (.calls), and their interpreters.
	own = append(own, allow[base:]...)
	strict := ""
	if len(c.env) > 0 || len(c.files) > 0 {
		// A call that holds a secret runs only its program and what its
		// .programs entry declares in .calls: whatever else the policy
		// allows, a program it runs would hold the secret too (git's
		// core.fsmonitor, a gh extension).
		allow = slices.Compact(slices.Clone(own))
		// A #! interpreter runs only as its script's: python3 exec'd
		// itself would run whatever the agent says, with the secret.
		for _, p := range append(slices.Clone(rights.scripts), scriptInterp) {
			if p != "" && !s.declares(c.prog.Name, p) {
				bare = append(bare, p)
			}
		}
		strict = fmt.Sprintf("the call holds a secret, so it runs only %s and what .programs %q declares in .calls", c.prog.Name, c.prog.Name)
	}
	// The call's directory by an absolute path: the init enters it after
	// its mounts, so a relative path cannot walk the original root mount.
	dir := r.Dir
	if dir == "" || !filepath.IsAbs(dir) {
		if s.wd == "" {
			return nil, nil, &RefusedError{Action: c.Action, Reason: "the session's working directory is unknown, so the call's directory cannot be entered inside the sandbox; the call was not run"}
		}
		dir = filepath.Join(s.wd, dir)
	}
	plan, err := s.planFiles(ctx)
	if err != nil {
		return nil, nil, &RefusedError{Action: c.Action, Reason: fmt.Sprintf("the file rules could not be applied (%v); the call was not run", err)}
	}
	if testAfterPlan != nil {
		testAfterPlan()
	}
	c.filePlan = plan
	spec := &sandbox.Spec{Path: prog, Argv: r.Argv, Env: env, Dir: dir, Writable: s.writable, ReadOnly: s.underWritable(append(append([]string(nil), rights.dirs...), s.pinned...)),
		Hide: s.hidden, Exec: allow, FileDir: c.fileDir, Files: c.files, Private: s.private, Notify: true, Net: true, FileRules: plan.rules}
	spec.Pins = s.pins(spec, rights, c)
	if len(s.private) > 0 {
		// The call's temporary folder is the session's private /tmp.
		spec.Env = append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR=/tmp")
	}
	// No route but chock's egress proxy, which the variables point at.
	spec.Env = proxyEnv(spec.Env)
	// What the kernel will let run, by identity: the log says what really
	// happens (the ELF interpreter runs when exec'd by name, say), not only
	// what the name's decision was.
	extra := map[sandbox.FileID]bool{}
	for _, p := range own {
		if id, err := sandbox.Identify(p); err == nil {
			extra[id] = true // the call's own program, its interpreter, what it declares
		}
	}
	runs := func(id sandbox.FileID) bool { return (strict == "" && rights.runs[id]) || extra[id] }
	spec.Interpreters = append(bareInterpreters(allow, rights), bare...)
	spec.Decided = s.argsDecided(ctx, allow)
	sc := sandbox.Command(spec, s.initPath)
	sc.Report = func(e sandbox.Exec) { s.nestedExec(c, e, rights, runs, strict) }
	sc.Verdict = func(e sandbox.Exec) string { return s.nestedArgs(ctx, c, e) }
	start := func() error {
		err := sc.Start(ctx)
		var se *sandbox.Error
		if errors.As(err, &se) && strings.HasPrefix(se.Step, "entering ") {
			return se.Err // the call's own dir: an error of the call, as without a sandbox
		}
		if errors.As(err, &se) {
			return &RefusedError{Action: c.Action, Reason: se.Error() + "; the call was not run (--no-sandbox runs calls without one, for a person who says so)", stale: se.Stale()}
		}
		if err != nil {
			return err
		}
		n, err := s.serveNet(ctx, c, sc.Net)
		if err != nil {
			// The program is running with no proxy: it is stopped, never
			// left with no fence it was promised.
			killGroup(sc.Process.Pid)
			sc.Wait()
			return &RefusedError{Action: c.Action, Reason: fmt.Sprintf("the egress proxy could not be set up (%v); the call was stopped", err)}
		}
		c.net = n
		return nil
	}
	return sc.Cmd, start, nil
}

// argsDecided are the files of allow some name of which a rule with .args
// matches: the exec watch reads the arguments of each exec of them and
// asks nestedArgs.
func (s *Session) argsDecided(ctx context.Context, allow []string) []string {
	pats := s.engine(ctx).ArgsPatterns()
	if len(pats) == 0 {
		return nil
	}
	var out []string
	for _, p := range allow {
		id, err := sandbox.Identify(p)
		if err != nil {
			continue
		}
		for _, n := range s.programs.NamesOf(id) {
			a, err := action.Exec(n)
			pa, perr := action.ParseAction(a)
			if err != nil || perr != nil || !slices.ContainsFunc(pats, func(pat action.Pattern) bool { return pat.Matches(pa) }) {
				continue
			}
			out = append(out, p)
			break
		}
	}
	return out
}

// nestedArgs decides a nested exec by its arguments (best effort: they are
// read from the process's memory, which a second thread can rewrite
// before the kernel reads them): it is refused where, under some name of
// its file, its arguments make the decision stricter than the program's
// own (a rule with .args that denies or asks, git push under git's
// allow). What the arguments would widen is not widened: the kernel's
// execute set is the program's.
func (s *Session) nestedArgs(ctx context.Context, c *Call, e sandbox.Exec) string {
	names := s.programs.NamesOf(e.ID)
	args := []string{action.Unknown}
	if len(e.Argv) > 0 {
		args = callArgs(e.Argv, slices.Contains(names, path.Base(e.Argv[0])))
	}
	for _, n := range names {
		act, err := action.Exec(n)
		if err != nil {
			continue
		}
		plain, err := s.engine(ctx).DecideUnlogged(ctx, act, config.Loop)
		if err != nil {
			return "its decision could not be made: " + err.Error()
		}
		d, err := s.decideArgs(ctx, act, args, config.Loop, c.ID)
		if err != nil {
			return "its decision could not be made: " + err.Error()
		}
		if d.Decision < plain.Decision {
			return fmt.Sprintf("%s with these arguments is %s", act, eval.Describe(d))
		}
	}
	return ""
}

// declares says whether program name's .calls declare a name that means
// the file at path.
func (s *Session) declares(name, path string) bool {
	id, err := sandbox.Identify(path)
	if err != nil {
		return false
	}
	for _, p := range s.opts.Engine.Meta().Programs {
		if p.Name != name {
			continue
		}
		for _, call := range p.Calls {
			n, ok := strings.CutPrefix(call, "exec.path.")
			if !ok {
				continue
			}
			for _, f := range s.programs.Means(n) {
				if f.ID == id {
					return true
				}
			}
		}
	}
	return false
}

// bareInterpreters are the files of allow that are ELF interpreters no
// allowed name means: each runs only as the interpreter the kernel loads
// for a program, never as a program itself (ld.so would run any file).
func bareInterpreters(allow []string, rights *execRights) []string {
	var out []string
	for _, p := range allow {
		if rights.interps[p] {
			out = append(out, p)
		}
	}
	return slices.Compact(out)
}

// declaredCalls adds what the program's .programs entry declares it runs
// (.calls) to one call's rights: each is allowed as a project rule naming
// it would allow it — unless the project denies or asks that very action
// by name — and only where every org ceiling allows it.
func (s *Session) declaredCalls(ctx context.Context, name string, rights *execRights, allow []string) (*execRights, []string, error) {
	var entry *compile.ProgramMeta
	for i, p := range s.opts.Engine.Meta().Programs {
		if p.Name == name && len(p.Calls) > 0 {
			entry = &s.opts.Engine.Meta().Programs[i]
		}
	}
	if entry == nil {
		return rights, allow, nil
	}
	own := *rights
	own.dirs = append([]string(nil), rights.dirs...)
	own.by = maps.Clone(rights.by)
	own.interps = maps.Clone(rights.interps)
	for _, call := range entry.Calls {
		n, ok := strings.CutPrefix(call, "exec.path.")
		if !ok || strings.ContainsAny(n, "*.") {
			continue // lint refuses it; it declares nothing
		}
		d, err := s.engine(ctx).DecideUnlogged(ctx, call, config.Loop)
		if err != nil {
			return nil, nil, err
		}
		if !declaredAllows(d, call) {
			continue
		}
		for _, f := range s.programs.Means(n) {
			if v, ok := rights.by[f.ID]; ok && v.name != n && namedRefusal(v.decision) {
				continue // another name of the file is refused by a rule: the strictest wins
			}
			allow = append(allow, f.Path)
			own.dirs = append(own.dirs, filepath.Dir(f.Path)) // read-only, like every program's
			interp, script, err := sandbox.Interpreter(f.Path)
			if err == nil && script && interp != "" {
				// A declared script: its #! interpreter runs with it where
				// the policy allows that too, as for a top-level script.
				if id, err := sandbox.Identify(interp); err == nil && rights.by[id].decision != nil && rights.by[id].decision.Decision == config.Allow {
					allow = append(allow, interp)
					own.scripts = append(own.scripts, interp)
					interp, script, err = sandbox.Interpreter(interp)
				}
			}
			if err == nil && !script && interp != "" {
				allow = append(allow, interp)
				if id, err := sandbox.Identify(interp); err == nil {
					if v, named := rights.by[id]; !named || v.decision.Decision != config.Allow {
						own.interps[interp] = true
					}
				}
			}
			own.by[f.ID] = verdict{name: n, decision: d, declared: fmt.Sprintf("declared by .programs %q (%s)", entry.Name, entry.Span)}
		}
	}
	return &own, allow, nil
}

// declaredAllows says whether a declaration lets act run (the one rule:
// config.DeclaredCallRuns).
func declaredAllows(d *eval.Decision, act string) bool {
	verdicts := make([]config.LayerVerdict, len(d.Layers))
	for i, l := range d.Layers {
		verdicts[i].Decision = l.Decision
		if l.Rule != nil {
			verdicts[i].Rule = l.Rule.Pattern
		}
	}
	return config.DeclaredCallRuns(act, verdicts) < 0
}

// nestedExec logs an exec a call's process made: the file, the name that
// let it run or refused it, and the deciding rule. The kernel's Landlock
// domain, made from the same rights, is what enforces it.
//
// strict, when the call holds a secret, says why a program the policy
// allows was refused all the same.
func (s *Session) nestedExec(c *Call, e sandbox.Exec, rights *execRights, runs func(sandbox.FileID) bool, strict string) {
	if errors.Is(e.Err, os.ErrNotExist) || errors.Is(e.Err, syscall.ENOTDIR) {
		return // a PATH search trying a directory that has no such file: nothing to run or refuse
	}
	// A call that execs in a loop fills no disk: past maxNested events the
	// rest are counted in one line.
	switch n := c.nested.Add(1); {
	case n == maxNested+1:
		s.event("exec.nested", sessionlog.F("parent", c.ID), sessionlog.F("outcome", "not logged"),
			sessionlog.F("why", fmt.Sprintf("more than %d nested execs in one call; the kernel still decides each", maxNested)))
		return
	case n > maxNested:
		return
	}
	fields := []sessionlog.Field{sessionlog.F("parent", c.ID), sessionlog.F("path", e.Path)}
	if e.File != "" {
		fields = append(fields, sessionlog.F("program", e.File))
	}
	v, known := rights.by[e.ID]
	switch {
	case e.Err != nil:
		fields = append(fields, sessionlog.F("outcome", "refused"), sessionlog.F("why", fmt.Sprintf("not a program file: %v", e.Err)))
	case e.Refused && e.Why != "":
		fields = append(fields, sessionlog.F("outcome", "refused"), sessionlog.F("why", e.Why))
	case e.Refused:
		fields = append(fields, sessionlog.F("outcome", "refused"), sessionlog.F("why", "an ELF interpreter (ld.so) run as a program would run any file it is given: it runs only as the interpreter of a program, unless a name on the PATH that means it is allowed"))
	case !known && runs(e.ID):
		fields = append(fields, sessionlog.F("outcome", "run"), sessionlog.F("why", "an ELF interpreter the allowed programs need, which the kernel lets run by name too"))
	case !known:
		fields = append(fields, sessionlog.F("outcome", "refused"), sessionlog.F("why", "not a program on the session's PATH"))
	default:
		rule, layer := "default", "project"
		if l := v.decision.Decider(); l != nil {
			layer, rule = l.Spelling(), l.RuleText()
		}
		outcome := "run"
		if !runs(e.ID) {
			outcome = "refused"
		}
		if v.declared != "" {
			rule, layer = v.declared, "project"
		}
		decision := v.decision.Decision.String()
		if v.declared != "" {
			decision = "allow"
		}
		fields = append(fields, sessionlog.F("action", v.decision.Action), sessionlog.F("decision", decision),
			sessionlog.F("layer", layer), sessionlog.F("rule", rule), sessionlog.F("outcome", outcome))
		switch {
		case outcome == "refused" && strict != "" && v.decision.Decision == config.Allow:
			fields = append(fields, sessionlog.F("why", strict))
		case v.decision.Decision == config.Ask && v.declared == "":
			fields = append(fields, sessionlog.F("why", "nobody can be asked in the middle of a call, so an ask reads as refused"))
		}
	}
	s.event("exec.nested", fields...)
	s.spanEvent(c, telemetry.NestedEvent, fields)
}

// maxNested is how many nested execs one call logs.
const maxNested = 1000

// initPath is the binary that makes sandboxes: chock-sandbox beside this
// executable when it is there (it starts in about a millisecond), else
// this binary itself, whose main calls sandbox.MaybeInit.
func initPath(given string) string {
	if given != "" {
		return given
	}
	if exe, err := os.Executable(); err == nil {
		sib := filepath.Join(filepath.Dir(exe), "chock-sandbox")
		if st, err := os.Stat(sib); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return sib
		}
	}
	return "/proc/self/exe"
}

// pins are the identities the init holds spec's paths to: every hidden
// and protected path as it was when the session started, every file the
// call may execute as the session found it (the program as its name meant
// it, the interpreters and declared programs as identified for the call).
// A path moved and replaced since is refused (hidden, read-only) or not
// executable (Exec), whatever it names now.
func (s *Session) pins(spec *sandbox.Spec, rights *execRights, c *Call) map[string]sandbox.Inode {
	pins := make(map[string]sandbox.Inode, len(spec.Exec)+len(s.pinIDs))
	for p, in := range s.pinIDs {
		pins[p] = in
	}
	for _, p := range spec.Exec {
		switch id, ok := rights.ids[p]; {
		case p == spec.Path:
			pins[p] = sandbox.InodeOf(c.prog.File.ID)
		case ok:
			pins[p] = sandbox.InodeOf(id)
		default:
			if id, err := sandbox.Identify(p); err == nil {
				pins[p] = sandbox.InodeOf(id)
			}
		}
	}
	return pins
}
