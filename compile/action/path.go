package action

// This file is the grammar of a path as it stands at the end of an fs
// action (fs.read.<PATH>, fs.write.<PATH>): one opaque segment that keeps
// its dots and slashes, written absolute (/etc/hosts), in the home folder
// (~/.ssh/id_ed25519) or relative to the project's folder (.git/config),
// with '*' and '**' as gitignore uses them in a pattern.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// MaxPath bounds a path in an action or pattern.
const MaxPath = 4096

// PathForm is how a path is rooted.
type PathForm int

// Path forms.
const (
	Relative PathForm = iota // .git/config: under the project's folder
	Home                     // ~/.ssh: under the home folder
	Absolute                 // /etc/hosts
)

// Form says how path p is rooted: "~" and "~/…" are Home, "/…" is
// Absolute, anything else is Relative.
func Form(p string) PathForm {
	switch {
	case strings.HasPrefix(p, "/"):
		return Absolute
	case p == "~" || strings.HasPrefix(p, "~/"):
		return Home
	}
	return Relative
}

// pathRows are the namespaces whose last placeholder is a <PATH>: filled
// by prepared from Namespaces (so the table stays the one owner), read
// by the parsers.
var pathRows []*Namespace

// PathPrefixes are the fixed starts of the namespaces whose actions end in
// one path (fs.read., fs.write.): after one, the rest of an action is one
// segment, dots and all.
func PathPrefixes() []string {
	out := make([]string, len(pathRows))
	for i, n := range pathRows {
		out[i] = n.Prefix()
	}
	return out
}

// pathTail says where the path starts in s, an action or pattern, when s
// is of a namespace with a path tail: s starts with the namespace's fixed
// segments (fs.read.), and everything after them is one path. It is the
// byte offset of the path, or -1.
func pathTail(s string) int {
	for _, n := range pathRows {
		if p := n.Prefix(); strings.HasPrefix(s, p) {
			return len(p)
		}
	}
	return -1
}

// checkPath checks the path p of an action (glob false) or a pattern
// (glob true) and returns the offset in p and message of its first error.
// A path is at most MaxPath bytes; it has no empty name (no "//", no '/'
// at its end but for "/" itself), no "." or ".." name, and in a pattern
// '*' stands anywhere in a name and "**" only as a whole name.
func checkPath(p string, glob bool) (int, string, string) {
	if p == "" {
		return 0, "empty path", "write a path: /etc/hosts, ~/.ssh, .git/config"
	}
	if len(p) > MaxPath {
		return MaxPath, fmt.Sprintf("a path of more than %d bytes", MaxPath), ""
	}
	if p == "/" || p == "~" {
		return -1, "", ""
	}
	rest, base := p, 0
	switch Form(p) {
	case Absolute:
		rest, base = p[1:], 1
	case Home:
		rest, base = p[2:], 2
	}
	off := base
	for _, name := range strings.Split(rest, "/") {
		switch {
		case name == "":
			return off, "empty name in path", "names are separated by one '/', with none at the end"
		case name == "." || name == "..":
			return off, fmt.Sprintf("%q in a path", name), "write the path without . and .. (relative paths start at the project's folder)"
		case !glob && strings.Contains(name, "*"):
			return off + strings.IndexByte(name, '*'), "an action names one path and has no '*'", "write the path of one file"
		case glob && name != "**" && strings.Contains(name, "**"):
			return off + strings.Index(name, "**"), fmt.Sprintf("%q: '**' must be a whole name", name),
				"'*' matches within one name, '**' as a whole name any number of names (a/**/b, **/.env, dir/**)"
		}
		off += len(name) + 1
	}
	return -1, "", ""
}

// IsPathGlob says whether a path tail holds a glob: a '*' anywhere, but a
// tail of exactly "*" is the ordinary trailing '*' of a pattern.
func IsPathGlob(tail string) bool { return tail != "*" && strings.Contains(tail, "*") }

// Glob is a path pattern with '*' or '**' in it, compiled.
type Glob struct {
	text string
	form PathForm
	re   *regexp.Regexp // the whole path
	lits int            // its literal characters, which rank it
}

// String is the glob as written.
func (g *Glob) String() string { return g.text }

// Literals is the number of its characters that are not '*': the more, the
// more specific the glob.
func (g *Glob) Literals() int { return g.lits }

// Regexp is the regular expression (RE2, unanchored text, to be wrapped in
// ^…$) a path the glob matches matches, whatever its form; Matches adds
// that the path's form be the glob's.
func (g *Glob) Regexp() string { return g.re.String()[len(`^(?:`) : len(g.re.String())-len(`)$`)] }

// Form is how the glob is rooted.
func (g *Glob) Form() PathForm { return g.form }

// Matches says whether path p (of an action) matches the glob.
func (g *Glob) Matches(p string) bool { return Form(p) == g.form && g.re.MatchString(p) }

// newGlob compiles a checked pattern path.
func newGlob(p string) *Glob {
	g := &Glob{text: p, form: Form(p), lits: len(p) - strings.Count(p, "*")}
	g.re = regexp.MustCompile(`^(?:` + globRegexp(p) + `)$`)
	return g
}

// globRegexp translates a checked pattern path into RE2: a name of '*'
// alone is one or more characters but '/', a '*' inside a name any run of
// them, "**" first or inside any number of leading names ("(?:.+/)?"),
// "**" last everything below, and "**" alone every relative path.
func globRegexp(p string) string {
	var b strings.Builder
	root, rest := "", p
	switch Form(p) {
	case Absolute:
		root, rest = "/", p[1:]
	case Home:
		root, rest = "~/", strings.TrimPrefix(p[1:], "/")
	}
	b.WriteString(regexp.QuoteMeta(root))
	names := strings.Split(rest, "/")
	for i, name := range names {
		last := i == len(names)-1
		switch {
		case name == "**" && last:
			b.WriteString(".+")
		case name == "**":
			b.WriteString("(?:.+/)?")
			continue // the '/' is in the group
		case name == "*":
			b.WriteString("[^/]+")
		default:
			for k, part := range strings.Split(name, "*") {
				if k > 0 {
					b.WriteString("[^/]*")
				}
				b.WriteString(regexp.QuoteMeta(part))
			}
		}
		if !last {
			b.WriteByte('/')
		}
	}
	return b.String()
}

// NotRelativeRegexp matches the start of a path that is not relative
// ("/…", "~", "~/…"): a relative glob's regular expression could match
// such a path too, so a relative glob also requires that this does not
// match (the compiled policy writes both conditions).
const NotRelativeRegexp = `(?:/|~/|~$)`

// PathHome is the prefix a path under the home folder is written with.
const PathHome = "~/"

// PathActionRegexp is the RE2 every well-formed action of a path family
// matches (the compiled policy's input check): its fixed segments, then a
// path as checkPath takes it.
func PathActionRegexp() string {
	var heads []string
	for _, n := range pathRows {
		heads = append(heads, regexp.QuoteMeta(n.Prefix()))
	}
	c := strings.Replace(SegmentClass(), "[^.*", "[^/*", 1)      // a name's characters
	first := strings.Replace(SegmentClass(), "[^.*", "[^/*.", 1) // one that is not '.'
	name := "(?:" + first + c + "*|\\." + first + c + "*|\\.\\." + c + "+)"
	return "(?:" + strings.Join(heads, "|") + ")(?:/|~|(?:/|~/)?" + name + "(?:/" + name + ")*)"
}

// PathPatternPrefix is the RE2 of the segments of p before its path: each
// literal as it is, each '*' as one segment, each followed by a '.'.
func PathPatternPrefix(p Pattern) string {
	var b strings.Builder
	for i, s := range p.segs[:len(p.segs)-1] {
		if p.Kind(i) == Star {
			b.WriteString(SegmentClass() + "+")
		} else {
			b.WriteString(regexp.QuoteMeta(s))
		}
		b.WriteString(`\.`)
	}
	return b.String()
}

// PathTail is the offset of the path in s, an action, pattern or region
// text of a path family (fs.read.…), or -1.
func PathTail(s string) int { return pathTail(s) }

// PathHead says whether segs are the fixed segments of a namespace whose
// next segment is a path (fs, read): that segment is then the last.
func PathHead(segs []string) bool {
	for _, n := range pathRows {
		if slices.Equal(segs, n.Fixed()) {
			return true
		}
	}
	return false
}

// PathNames are the names path p (absolute, clean) has in fs actions: its
// absolute path, ~/… under home, relative under each of the folders in
// rel (the project's, each --writable one), and .git/… under each of the
// folders in git (a worktree's gitdir and common dir). A path is decided
// under every name it has, the strictest decision winning.
func PathNames(p, home string, rel, git []string) []string {
	out := []string{p}
	if home != "" {
		if p == home {
			out = append(out, "~")
		} else if r, ok := PathUnder(home, p); ok {
			out = append(out, PathHome+r)
		}
	}
	for _, root := range rel {
		if r, ok := PathUnder(root, p); ok {
			out = append(out, r)
		}
	}
	for _, g := range git {
		if p == g {
			out = append(out, ".git")
		} else if r, ok := PathUnder(g, p); ok {
			out = append(out, ".git/"+r)
		}
	}
	return out
}

// PathUnder is p relative to dir, when p is inside it.
func PathUnder(dir, p string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), p != "/"
	}
	rel, ok := strings.CutPrefix(p, dir+"/")
	return rel, ok && rel != ""
}
