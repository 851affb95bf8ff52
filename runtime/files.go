package runtime

// This file turns the file rules (fs.read.<PATH>, fs.write.<PATH>: the
// policy's and chock's defaults, config.FileDefaults) into the mounts of
// one call (sandbox.FileRule): every path a rule names, resolved against
// the real file system, is decided under every name it has, the
// strictest winning, and protected by the kernel inside the call.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
	"golang.org/x/sys/unix"
)

// MaxFileWalk bounds the entries one call's plan reads to find the paths
// a glob names (fs.read.**/.env): past it the call is refused, since
// which files the glob protects cannot be known.
const MaxFileWalk = 200_000

// planTimeout bounds the decisions of one call's plan.
const planTimeout = 30 * time.Second

// fileEntry is the witness name for "any entry inside a folder" that no
// rule names by itself.
const fileEntry = "chock-any-entry"

// filePlan is what the file rules make of one call.
type filePlan struct {
	rules []sandbox.FileRule
	// placeholders are the empty folders made for this call where a
	// protected path was missing; release removes them.
	placeholders []string
	// protected are the paths refused inside the call, with the rule
	// that refuses each, for the call's result.
	protected []protectedPath
	// watched are missing protected paths no placeholder can stand for
	// (config.FileDefault.Watched): one the call makes is moved aside.
	watched []protectedPath
}

// protectedPath is one path the call may not read or write, and why.
type protectedPath struct {
	path  string // absolute, resolved
	names []string
	op    string // "read" or "write"
	rule  string // the deciding rule, as explain names it
}

// candidate is a path a rule names.
type candidate struct {
	path    string // absolute, lexical
	subtree bool   // everything inside it too (a rule ending in /**)
}

// fileRoots are what the names of a path are made from.
type fileRoots struct {
	home string
	// rel are the folders a relative path is under: the project's and
	// every --writable one.
	rel []string
	// git are the folders a worktree's .git file points to (its gitdir and
	// common dir): a path in one is also named .git/...
	git []string
	// hooks are the folders a repository's core.hooksPath names (git runs
	// its hooks from there, not .git/hooks): a path in one is also named
	// .git/hooks/...
	hooks []string
}

func (s *Session) fileRoots() fileRoots {
	r := fileRoots{home: s.homeDir()}
	if s.wd != "" {
		r.rel = append(r.rel, s.wd)
	}
	for _, w := range s.opts.Writable {
		if abs, err := filepath.Abs(w); err == nil {
			r.rel = append(r.rel, abs)
		}
	}
	for _, root := range r.rel {
		dirs := gitDirs(root)
		r.git = append(r.git, dirs...)
		for _, g := range append([]string{filepath.Join(root, ".git")}, dirs...) {
			if h := hooksPath(g, root, r.home, r.rel); h != "" && !slices.Contains(r.hooks, h) {
				r.hooks = append(r.hooks, h)
			}
		}
	}
	return r
}

// hooksPath is the folder the config of git folder g names in
// core.hooksPath (relative to the worktree's root, as git reads it), or
// "". Values are read as git reads them (a key on its section's line,
// quoted parts, escapes, comments, continued lines); an include the config
// makes is not followed. A folder that holds a writable folder, the home
// folder or / is left out: covering it would refuse every write of a call.
func hooksPath(g, root, home string, writable []string) string {
	b, err := os.ReadFile(filepath.Join(g, "config"))
	if err != nil || len(b) > 1<<20 {
		return ""
	}
	text := strings.ReplaceAll(string(b), "\\\n", "") // a value continued on the next line
	core, out := false, ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			sec, rest, _ := strings.Cut(line[1:], "]")
			core = strings.EqualFold(strings.TrimSpace(sec), "core")
			line = strings.TrimSpace(rest)
		}
		k, v, ok := strings.Cut(line, "=")
		if !core || !ok || !strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			continue
		}
		out = gitValue(v) // the last one wins, as in git
	}
	switch {
	case out == "":
		return ""
	case strings.HasPrefix(out, "~/") && home != "":
		out = filepath.Join(home, out[2:])
	case !filepath.IsAbs(out):
		out = filepath.Join(root, out)
	}
	out = filepath.Clean(out)
	for _, w := range append([]string{"/", home}, writable...) {
		if w != "" && (out == w || strings.HasPrefix(w, out+"/") || out == "/") {
			return ""
		}
	}
	return out
}

// gitValue is a git config value as git reads it: surrounding space
// trimmed, "…" parts unquoted, \" \\ \n \t \b unescaped, and a # or ;
// outside quotes starting a comment.
func gitValue(v string) string {
	var b strings.Builder
	quoted, pending := false, ""
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteString(pending)
			pending = ""
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(v[i])
			}
		case c == '"':
			b.WriteString(pending)
			pending = ""
			quoted = !quoted
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimLeft(b.String(), " \t")
		case !quoted && (c == ' ' || c == '\t'):
			pending += string(c) // kept only if more of the value follows
		default:
			b.WriteString(pending)
			pending = ""
			b.WriteByte(c)
		}
	}
	return strings.TrimLeft(b.String(), " \t")
}

// homeDir is the home folder calls get (HOME of the base environment),
// or this process's.
func (s *Session) homeDir() string {
	for _, kv := range s.opts.BaseEnv {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	return ""
}

// gitDirs follows a .git file (a worktree's, a submodule's) to its gitdir
// and that folder's common dir.
func gitDirs(root string) []string {
	b, err := os.ReadFile(filepath.Join(root, ".git"))
	if err != nil || len(b) > 4096 {
		return nil
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	out := []string{filepath.Clean(dir)}
	if c, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(dir, cd)
		}
		out = append(out, filepath.Clean(cd))
	}
	return out
}

// names are the names path p (absolute, clean) has in actions
// (action.PathNames).
func (r fileRoots) names(p string) []string {
	out := action.PathNames(p, r.home, r.rel, r.git)
	for _, h := range r.hooks {
		if p == h {
			out = append(out, ".git/hooks")
		} else if rel, ok := action.PathUnder(h, p); ok {
			out = append(out, ".git/hooks/"+rel)
		}
	}
	return out
}

// fsPatterns are the fs patterns of the policy's layers (chock's defaults
// among them) that name paths: all but fs.read.* and the like.
func fsPatterns(m eval.Meta) []action.Pattern {
	var out []action.Pattern
	seen := map[string]bool{}
	for _, l := range m.Layers {
		for _, r := range l.Rules {
			p, err := action.ParsePattern(r.Pattern)
			if err != nil || seen[r.Pattern] || p.Len() != 3 || p.Segments()[0] != "fs" {
				continue
			}
			if k := p.Kind(2); k != action.Literal && k != action.PathGlob {
				continue // fs.read.*: every path, named by none
			}
			seen[r.Pattern] = true
			out = append(out, p)
		}
	}
	return out
}

// fsPatterns are fsPatterns of the engine's current policy, parsed once
// per revision.
func (s *Session) fsPatterns(ctx context.Context) []action.Pattern {
	e := s.engine(ctx)
	rev := e.Revision()
	s.walks.mu.Lock()
	defer s.walks.mu.Unlock()
	if s.walks.rev != rev || s.walks.pats == nil {
		s.walks.rev, s.walks.pats = rev, fsPatterns(e.Meta())
	}
	return s.walks.pats
}

// candidates are the paths the patterns name under the roots: a literal
// path as it is, a glob's literal folder when the rest is "**", else what
// a walk of that folder finds that the glob matches.
//
// A repository inside a root that a walk finds (sub/.git, a vendored
// checkout) is one more folder of r.git: its config and hooks are named
// .git/... and protected as the project's own are.
func (r *fileRoots) candidates(pats []action.Pattern, cache *walkCache) ([]candidate, error) {
	var out []candidate
	walks := map[string][]*action.Glob{} // folder to walk: the globs to match
	var walkOrder []string
	type base struct {
		dir   string
		names []string
	}
	split := func(r string) []string {
		if r == "" {
			return nil
		}
		return strings.Split(r, "/")
	}
	add := func(p action.Pattern, b base) {
		lit := 0
		for lit < len(b.names) && !strings.Contains(b.names[lit], "*") {
			lit++
		}
		dir := filepath.Join(append([]string{b.dir}, b.names[:lit]...)...)
		switch {
		case p.Glob() == nil:
			out = append(out, candidate{path: dir})
		case lit == len(b.names)-1 && b.names[lit] == "**":
			out = append(out, candidate{path: dir, subtree: true})
		default:
			if _, ok := walks[dir]; !ok {
				walkOrder = append(walkOrder, dir)
			}
			walks[dir] = append(walks[dir], p.Glob())
		}
	}
	var inGit []action.Pattern // the relative patterns under .git/
	for _, p := range pats {
		tail := p.Segments()[p.Len()-1]
		rest := tail
		var bases []base
		switch action.Form(tail) {
		case action.Absolute:
			bases = []base{{"/", split(strings.TrimPrefix(tail, "/"))}}
		case action.Home:
			if r.home == "" {
				continue
			}
			bases = []base{{r.home, split(strings.TrimPrefix(strings.TrimPrefix(tail, "~"), "/"))}}
		default:
			names := split(rest)
			for _, root := range r.rel {
				bases = append(bases, base{root, names})
			}
			if names[0] == ".git" {
				inGit = append(inGit, p)
				for _, g := range r.git {
					bases = append(bases, base{g, names[1:]})
				}
				if len(names) > 1 && names[1] == "hooks" {
					for _, h := range r.hooks {
						bases = append(bases, base{h, names[2:]})
					}
				}
			}
		}
		for _, b := range bases {
			add(p, b)
		}
	}
	walked := 0
	known := map[string]bool{}
	for _, g := range r.git {
		known[g] = true
	}
	for i := 0; i < len(walkOrder); i++ {
		dir := walkOrder[i]
		found, gits, n, err := cache.walk(dir, walks[dir], *r, MaxFileWalk-walked)
		walked += n
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		for _, g := range gits {
			if known[g] {
				continue
			}
			known[g] = true
			r.git = append(r.git, g)
			for _, p := range inGit {
				add(p, base{g, split(p.Segments()[p.Len()-1])[1:]})
			}
		}
	}
	return out, nil
}

// errWalk is a glob's walk past MaxFileWalk.
var errWalk = errors.New("too many files to find what the file rules' globs protect")

// walkCache keeps, per folder, what a walk read of it: a folder whose
// modification time, change time and inode are as they were has the same
// entries, so the next call's walk reads only what changed (one lstat per
// folder, rather than a read of each).
type walkCache struct {
	mu   sync.Mutex
	dirs map[string]walkedDir
	// rev and pats are the policy revision and its fs patterns.
	rev  string
	pats []action.Pattern
}

type walkedDir struct {
	mtime, ctime unix.Timespec
	ino          uint64
	subdirs      []string // names
	files        []string // names of what is not a folder
	// matched are, per set of globs (their texts joined), the folder's
	// paths they match: the folder and its files.
	matched map[string][]string
}

// walk walks dir (not following symlinks, leaving .git folders out) for
// the paths some name of which a glob of globs matches, and says which
// repositories it passed that are not a root's own: each .git folder, and
// where .git is a file (a submodule, a worktree) the folders it points to.
func (c *walkCache) walk(dir string, globs []*action.Glob, r fileRoots, budget int) ([]candidate, []string, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs == nil {
		c.dirs = map[string]walkedDir{}
	}
	var out []candidate
	var gits []string
	n := 0
	var texts []string
	for _, g := range globs {
		texts = append(texts, g.String())
	}
	key := strings.Join(texts, "\x00")
	matches := func(path string) bool {
		for _, name := range r.names(path) {
			for _, g := range globs {
				if g.Matches(name) {
					return true
				}
			}
		}
		return false
	}
	var visit func(d string) error
	visit = func(d string) error {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil // gone, or not a folder: nothing to find
		}
		w, ok := c.dirs[d]
		if !ok || w.mtime != st.Mtim || w.ctime != st.Ctim || w.ino != st.Ino {
			entries, err := readDir(d)
			if err != nil {
				return nil // unreadable to chock: the call's uid cannot read it either
			}
			w = walkedDir{mtime: st.Mtim, ctime: st.Ctim, ino: st.Ino}
			for _, e := range entries {
				if e.IsDir() {
					w.subdirs = append(w.subdirs, e.Name())
				} else {
					w.files = append(w.files, e.Name())
				}
			}
			c.dirs[d] = w
		}
		if n += 1 + len(w.files); n > budget {
			return errWalk
		}
		found, ok := w.matched[key]
		if !ok {
			found = []string{}
			for _, p := range append([]string{d}, w.files...) {
				if p != d {
					p = filepath.Join(d, p)
				}
				if matches(p) {
					found = append(found, p)
				}
			}
			if w.matched == nil {
				w.matched = map[string][]string{}
			}
			w.matched[key] = found
			c.dirs[d] = w
		}
		for _, p := range found {
			out = append(out, candidate{path: p})
		}
		if !slices.Contains(r.rel, d) {
			if slices.Contains(w.subdirs, ".git") {
				gits = append(gits, filepath.Join(d, ".git"))
			}
			if slices.Contains(w.files, ".git") {
				gits = append(gits, gitDirs(d)...)
			}
		}
		for _, sd := range w.subdirs {
			if sd == ".git" {
				continue
			}
			if err := visit(filepath.Join(d, sd)); err != nil {
				return err
			}
		}
		return nil
	}
	err := visit(dir)
	return out, gits, n, err
}

// planFiles works out the call's file mounts.
func (s *Session) planFiles(ctx context.Context) (*filePlan, error) {
	roots := s.fileRoots()
	cands, err := roots.candidates(s.fsPatterns(ctx), &s.walks)
	if err != nil {
		return nil, err
	}
	// One entry per real path: a path reached through a symlink is
	// protected where it leads, under the names of both.
	type target struct {
		real    string
		names   []string
		subtree bool
		dir     bool
		exists  bool
	}
	byReal := map[string]*target{}
	var order []string
	for _, c := range cands {
		real, exists := c.path, false
		if rp, err := filepath.EvalSymlinks(c.path); err == nil {
			real, exists = rp, true
		}
		t := byReal[real]
		if t == nil {
			t = &target{real: real, exists: exists}
			if st, err := os.Stat(real); err == nil {
				t.dir = st.IsDir()
			}
			byReal[real] = t
			order = append(order, real)
		}
		t.subtree = t.subtree || c.subtree
		for _, n := range append(roots.names(c.path), roots.names(real)...) {
			if !slices.Contains(t.names, n) {
				t.names = append(t.names, n)
			}
		}
	}
	sort.Strings(order)
	// The actions to decide: each name read and written, and for a folder
	// an entry inside it no rule names.
	var acts []string
	idx := map[string]int{}
	ask := func(a string) {
		if _, ok := idx[a]; !ok {
			idx[a] = len(acts)
			acts = append(acts, a)
		}
	}
	verbs := []string{"fs.read.", "fs.write."}
	for _, real := range order {
		t := byReal[real]
		for _, n := range t.names {
			for _, v := range verbs {
				ask(v + n)
				if t.dir || t.subtree || !t.exists {
					ask(v + strings.TrimSuffix(n, "/") + "/" + fileEntry)
				}
			}
		}
	}
	// Decided under chock's own bound, not the call's time limit: the
	// first call of a revision asks hundreds, which a short limit would
	// turn into a refusal of the call.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), planTimeout)
	defer cancel()
	ds, err := s.engine(ctx).DecideManyUnlogged(dctx, acts, config.Loop)
	if err != nil {
		return nil, err
	}
	// refused is the first name's decision that refuses, of the names
	// given: a name that cannot form an action is refused too.
	// A path none of whose names forms an action (a space or a '*' in a
	// folder's name: "my app/.env") cannot be decided, which is a deny.
	refused := func(verb string, names []string, inside bool) (bool, string) {
		decided := false
		for _, n := range names {
			a := verb + n
			if inside {
				a = verb + strings.TrimSuffix(n, "/") + "/" + fileEntry
			}
			i, ok := idx[a]
			if !ok {
				continue
			}
			d := ds[i]
			if d.Error != "" {
				continue // a name that is not an action: its other names decide
			}
			decided = true
			if d.Decision != config.Allow {
				return true, ruleText(d)
			}
		}
		if !decided {
			return true, "no rule can decide it (its path forms no action), which is a deny"
		}
		return false, ""
	}
	plan := &filePlan{}
	writable := func(p string) bool {
		for _, w := range s.writable {
			if p == w || strings.HasPrefix(p, w+"/") {
				return true
			}
		}
		return false
	}
	for _, real := range order {
		t := byReal[real]
		readAll, rr := refused("fs.read.", t.names, true)
		readSelf, rs := refused("fs.read.", t.names, false)
		writeAll, wr := refused("fs.write.", t.names, true)
		writeSelf, ws := refused("fs.write.", t.names, false)
		if t.exists && isPlaceholder(real) {
			// Another session's placeholder: as read-only as its own.
			plan.rules = append(plan.rules, sandbox.FileRule{Path: real, Op: sandbox.ReadOnly})
			continue
		}
		if !t.exists && (!creatable(real) || inPlaceholder(real)) {
			continue // under a file (.git/config where .git is a file): nothing can be made there
		}
		if !t.exists {
			// A path not there yet is protected from being made where it
			// would be written: a placeholder in its place, read-only
			// inside, made here and removed when the call ends. It is an
			// empty folder where the path or a protected path below it is
			// a folder (.git, .git/hooks, .vscode), else an empty file
			// (.envrc, .gitconfig: a tool outside reads an empty one as
			// nothing, where a folder would be an error).
			watched := false
			for _, n := range t.names {
				watched = watched || config.Watched("fs.write."+n)
			}
			if watched && writeSelf && writable(filepath.Dir(real)) {
				plan.watched = append(plan.watched, protectedPath{path: real, names: t.names, op: "write", rule: ws})
				continue
			}
			if (writeSelf || writeAll) && writable(filepath.Dir(firstMissing(real))) {
				m := firstMissing(real)
				if g := filepath.Dir(m); filepath.Base(g) == ".git" && emptyDir(g) {
					// An empty .git (another chock process's placeholder, or
					// one a call made) is read-only as it is: nothing is made
					// inside it, which would keep the other from removing it.
					if i := slices.IndexFunc(plan.rules, func(r sandbox.FileRule) bool { return r.Path == g }); i >= 0 {
						plan.rules[i].Op = sandbox.ReadOnly // pinned as a folder: now read-only too
					} else {
						plan.rules = append(plan.rules, sandbox.FileRule{Path: g, Op: sandbox.ReadOnly})
					}
					plan.protected = append(plan.protected, protectedPath{path: real, names: t.names, op: "write", rule: ws + wr})
					continue
				}
				dir := m != real || t.subtree
				for _, other := range order {
					if _, ok := action.PathUnder(m, other); ok {
						dir = true
					}
				}
				if err := s.placeholder(m, dir); err != nil {
					return nil, err
				}
				plan.placeholders = append(plan.placeholders, m)
				plan.rules = append(plan.rules, sandbox.FileRule{Path: m, Op: sandbox.ReadOnly})
				why := ws
				if !writeSelf {
					why = wr
				}
				plan.protected = append(plan.protected, protectedPath{path: real, names: t.names, op: "write", rule: why})
			}
			continue
		}
		// A path both unreadable and read-only is made read-only first: a
		// bind keeps its device and inode, so the cover still finds the
		// file planned, where the cover first would leave the read-only
		// bind a tmpfs to refuse.
		var unreadable []sandbox.FileRule
		switch {
		case t.dir && readAll:
			unreadable = append(unreadable, sandbox.FileRule{Path: real, Op: sandbox.Unreadable})
			plan.protected = append(plan.protected, protectedPath{path: real, names: t.names, op: "read", rule: rr + rs})
		case !t.dir && readSelf:
			unreadable = append(unreadable, sandbox.FileRule{Path: real, Op: sandbox.Unreadable})
			plan.protected = append(plan.protected, protectedPath{path: real, names: t.names, op: "read", rule: rs})
		}
		if !writable(real) {
			plan.rules = append(plan.rules, unreadable...)
			continue // read-only whatever a rule says
		}
		switch {
		case t.dir && writeAll:
			plan.rules = append(plan.rules, sandbox.FileRule{Path: real, Op: sandbox.ReadOnly})
			plan.protected = append(plan.protected, protectedPath{path: real, names: t.names, op: "write", rule: wr})
		case t.dir && writeSelf:
			plan.rules = append(plan.rules, sandbox.FileRule{Path: real, Op: sandbox.Pinned})
		case !t.dir && writeSelf:
			plan.rules = append(plan.rules, sandbox.FileRule{Path: real, Op: sandbox.ReadOnly})
			plan.protected = append(plan.protected, protectedPath{path: real, names: t.names, op: "write", rule: ws})
		}
		plan.rules = append(plan.rules, unreadable...)
	}
	readOK, writeOK := byRealAllowed(order, func(real string) (bool, bool) {
		t := byReal[real]
		r, _ := refused("fs.read.", t.names, false)
		w, _ := refused("fs.write.", t.names, false)
		return t.exists && !r, t.exists && !w
	})
	keepExceptions(plan.rules, readOK, writeOK)
	// Shallowest first, so a deeper one lands on what the shallower made;
	// one under an unreadable folder that is not kept through it is moot.
	sort.SliceStable(plan.rules, func(i, j int) bool {
		return strings.Count(plan.rules[i].Path, "/") < strings.Count(plan.rules[j].Path, "/")
	})
	plan.rules = dropCovered(plan.rules)
	// A path the session hides already (the store, the logs) is covered
	// before the file rules are made: left to that.
	plan.rules = slices.DeleteFunc(plan.rules, func(r sandbox.FileRule) bool {
		for _, h := range s.hidden {
			if _, in := action.PathUnder(h, r.Path); in || r.Path == h {
				return true
			}
		}
		return false
	})
	// Each path's identity now: the init refuses one moved and replaced
	// before it is protected.
	for i := range plan.rules {
		var st unix.Stat_t
		if unix.Lstat(plan.rules[i].Path, &st) == nil {
			plan.rules[i].Dev, plan.rules[i].Ino = uint64(st.Dev), st.Ino
		}
	}
	return plan, nil
}

// byRealAllowed lists the paths a rule lets be read and written.
func byRealAllowed(order []string, allowed func(string) (bool, bool)) (read, write []string) {
	for _, p := range order {
		r, w := allowed(p)
		if r {
			read = append(read, p)
		}
		if w {
			write = append(write, p)
		}
	}
	return read, write
}

// keepExceptions lets through, under an unreadable or read-only folder,
// the paths inside it that a rule allows (fs.read.~/.aws/config under
// fs.read.~/.aws/**).
func keepExceptions(rules []sandbox.FileRule, read, write []string) {
	for i := range rules {
		r := &rules[i]
		allowed := write
		if r.Op == sandbox.Unreadable {
			allowed = read
		} else if r.Op != sandbox.ReadOnly {
			continue
		}
		for _, p := range allowed {
			if rel, ok := action.PathUnder(r.Path, p); ok {
				r.Keep = append(r.Keep, rel)
			}
		}
	}
}

// dropCovered leaves out the rules for paths under an unreadable folder
// that it does not let through: they cannot be reached inside anyway,
// and their path is not there under the cover.
func dropCovered(rules []sandbox.FileRule) []sandbox.FileRule {
	var out []sandbox.FileRule
	for _, r := range rules {
		moot := false
		for _, c := range out {
			rel, ok := action.PathUnder(c.Path, r.Path)
			if !ok || c.Op != sandbox.Unreadable {
				continue
			}
			kept := false
			for _, k := range c.Keep {
				if rel == k || strings.HasPrefix(rel, k+"/") {
					kept = true
				}
			}
			if !kept {
				moot = true
			}
		}
		if !moot {
			out = append(out, r)
		}
	}
	return out
}

// creatable says whether p, missing, could be made: the nearest of its
// folders that is there is a folder.
func creatable(p string) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if st, err := os.Lstat(d); err == nil {
			return st.IsDir()
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// readDir is os.ReadDir of a folder opened as a folder only, not
// following a symlink: a call that swaps a FIFO in after the walk's lstat
// cannot make the plan wait on it (os.Open of a FIFO blocks).
func readDir(p string) ([]os.DirEntry, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	es, err := f.ReadDir(-1)
	slices.SortFunc(es, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}

// emptyDir says whether p is a folder (not a symlink) with nothing in it.
// It is opened as a folder only, not following a symlink: a call that
// swaps in a FIFO cannot make the plan wait on it.
func emptyDir(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// firstMissing is the outermost folder of p (or p) that is not there.
func firstMissing(p string) string {
	for {
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		if _, err := os.Lstat(parent); err == nil {
			return p
		}
		p = parent
	}
}

// ruleText names the rule that decided d, as explain does.
func ruleText(d *eval.Decision) string {
	l := d.Decider()
	if l == nil {
		return d.Action
	}
	out := l.Spelling() + " " + l.RuleText()
	if l.Rule != nil && l.Rule.Why != "" {
		out += ": " + l.Rule.Why
	}
	return out
}

// placeholders are the placeholders this session holds (files.go):
// made once, kept until the session ends.
type placeholders struct {
	mu   sync.Mutex
	held []string
}

// heldPlaceholders are the placeholders every session of this process
// holds, with how many hold each: a session in the same folder as another
// protects the other's placeholder as its own (read-only, not merely
// pinned) and makes none inside it.
var heldPlaceholders struct {
	sync.Mutex
	uses map[string]int
	made map[string]os.FileInfo
}

// isPlaceholder says whether p is a placeholder some session holds.
func isPlaceholder(p string) bool {
	heldPlaceholders.Lock()
	defer heldPlaceholders.Unlock()
	return heldPlaceholders.uses[p] > 0
}

// inPlaceholder says whether p lies inside a placeholder some session
// holds.
func inPlaceholder(p string) bool {
	heldPlaceholders.Lock()
	defer heldPlaceholders.Unlock()
	for h := range heldPlaceholders.uses {
		if _, in := action.PathUnder(h, p); in {
			return true
		}
	}
	return false
}

// placeholder makes (or shares) the empty folder (dir) or file at p.
func (s *Session) placeholder(p string, dir bool) error {
	s.holders.mu.Lock()
	defer s.holders.mu.Unlock()
	if slices.Contains(s.holders.held, p) {
		return nil
	}
	heldPlaceholders.Lock()
	defer heldPlaceholders.Unlock()
	if heldPlaceholders.uses == nil {
		heldPlaceholders.uses, heldPlaceholders.made = map[string]int{}, map[string]os.FileInfo{}
	}
	if heldPlaceholders.uses[p] == 0 {
		var err error
		if dir {
			err = os.Mkdir(p, 0o700)
		} else {
			var f *os.File
			if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				err = f.Close()
			}
		}
		if errors.Is(err, fs.ErrExist) {
			return nil // made meanwhile (by another process): protected as it is, and not this session's to remove
		}
		if err != nil {
			return fmt.Errorf("making the placeholder %s, which keeps a protected path from being made: %w", p, err)
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		heldPlaceholders.made[p] = st
	}
	heldPlaceholders.uses[p]++
	s.holders.held = append(s.holders.held, p)
	return nil
}

// release is the end of a call's use of its placeholders: they stay for
// the session (made once, a call's start costs nothing for them) and go
// when it ends (releaseAll).
func (s *Session) release(*filePlan) {}

// removePlaceholder removes p when it is still the placeholder made (the
// same file, and empty: a folder with something in it is not removed).
func removePlaceholder(p string, made os.FileInfo) {
	st, err := os.Lstat(p)
	if err != nil || made == nil || !os.SameFile(st, made) {
		return
	}
	if st.Mode().IsRegular() && st.Size() != 0 {
		return
	}
	os.Remove(p)
}

// releaseAll gives up the session's placeholders: one no other session
// holds is removed, the deepest first, when it is still the empty one
// made.
func (s *Session) releaseAll() {
	s.holders.mu.Lock()
	held := s.holders.held
	s.holders.held = nil
	s.holders.mu.Unlock()
	heldPlaceholders.Lock()
	defer heldPlaceholders.Unlock()
	slices.SortFunc(held, func(a, b string) int { return len(b) - len(a) })
	for _, p := range held {
		if heldPlaceholders.uses[p]--; heldPlaceholders.uses[p] > 0 {
			continue
		}
		removePlaceholder(p, heldPlaceholders.made[p])
		delete(heldPlaceholders.uses, p)
		delete(heldPlaceholders.made, p)
	}
}

// refusalWords are how a program says the kernel refused it a path.
var refusalWords = []string{"Permission denied", "Read-only file system", "Device or resource busy", "Operation not permitted", "EACCES", "EROFS", "EBUSY", "PermissionError"}

// fileRefusals adds to a call's result a line for each protected path the
// call was refused, as its output tells (the kernel says EACCES, EROFS or
// EBUSY to the program and nothing to chock): the path, and the rule that
// protects it, as chock explain names it. Each is logged.
func (s *Session) fileRefusals(c *Call, res *Result) {
	if c.filePlan == nil {
		return
	}
	s.moveAside(c, res)
	if len(c.filePlan.protected) == 0 {
		return
	}
	var lines []string
	for _, out := range []string{res.Stderr, res.Stdout} {
		for _, l := range strings.Split(out, "\n") {
			for _, w := range refusalWords {
				if strings.Contains(l, w) {
					lines = append(lines, l)
					break
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	var notes []string
	roots := s.fileRoots()
	dir := s.wd
	if c.Exec != nil && c.Exec.Dir != "" {
		dir = c.Exec.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.wd, dir)
		}
	}
	for _, pp := range c.filePlan.protected {
		spellings := []string{pp.path}
		for _, n := range pp.names {
			if action.Form(n) != action.Home {
				spellings = append(spellings, n)
			}
		}
		for _, l := range lines {
			for _, sp := range spellings {
				i := strings.Index(l, sp)
				if i < 0 {
					continue
				}
				// The path the program names: from the spelling to the
				// next ':', quote or space.
				end := i + strings.IndexAny(l[i:]+" ", ": '\"\t")
				p := l[i:end]
				if !filepath.IsAbs(p) {
					p = filepath.Join(dir, p)
				}
				if rel, ok := action.PathUnder(pp.path, p); !ok && p != pp.path && rel == "" {
					continue
				}
				name := preferredName(roots.names(filepath.Clean(p)))
				note := fmt.Sprintf("chock: %s is not %s inside a call (fs.%s.%s: %s)", p, map[string]string{"read": "readable", "write": "writable"}[pp.op], pp.op, name, pp.rule)
				if !slices.Contains(notes, note) {
					notes = append(notes, note)
					fields := []sessionlog.Field{sessionlog.F("parent", c.ID), sessionlog.F("path", p), sessionlog.F("action", "fs."+pp.op+"."+name), sessionlog.F("rule", pp.rule)}
					s.event("fs.refused", fields...)
					s.spanEvent(c, "fs.refused", fields)
				}
				break
			}
		}
	}
	if len(notes) > 0 {
		if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
			res.Stderr += "\n"
		}
		res.Stderr += strings.Join(notes, "\n") + "\n"
	}
}

// preferredName is the name a person writes a path by: ~/… under the home
// folder, else relative to the project, else absolute.
func preferredName(names []string) string {
	for _, form := range []action.PathForm{action.Home, action.Relative} {
		for _, n := range names {
			if action.Form(n) == form {
				return n
			}
		}
	}
	return names[0]
}

// moveAside moves a watched path the call made out of the way (renamed,
// beside it, to NAME.chock-refused, never deleted), and says so in the
// call's result and the log.
func (s *Session) moveAside(c *Call, res *Result) {
	for _, w := range c.filePlan.watched {
		if _, err := os.Lstat(w.path); err != nil {
			continue
		}
		to := w.path + ".chock-refused"
		for i := 2; ; i++ {
			if _, err := os.Lstat(to); err != nil {
				break
			}
			to = fmt.Sprintf("%s.chock-refused-%d", w.path, i)
		}
		note := fmt.Sprintf("chock: the call made %s, which is not writable inside a call (fs.write.%s: %s); it is moved to %s", w.path, preferredName(w.names), w.rule, to)
		if err := os.Rename(w.path, to); err != nil {
			note = fmt.Sprintf("chock: the call made %s, which is not writable inside a call (fs.write.%s: %s), and it could not be moved aside: %v", w.path, preferredName(w.names), w.rule, err)
		}
		fields := []sessionlog.Field{sessionlog.F("parent", c.ID), sessionlog.F("path", w.path), sessionlog.F("action", "fs.write."+preferredName(w.names)), sessionlog.F("rule", w.rule), sessionlog.F("outcome", "moved aside")}
		s.event("fs.refused", fields...)
		s.spanEvent(c, "fs.refused", fields)
		if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
			res.Stderr += "\n"
		}
		res.Stderr += note + "\n"
	}
}
