package eval

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/safetext"
)

// Resolution is the resolution rule in one sentence.
const Resolution = "In each layer the most specific matching rule decides (on identical patterns deny beats ask beats allow), " +
	"else the layer's default; the result is the most restrictive of the project and every org ceiling; " +
	"at start, when nobody can be asked, ask reads as deny."

// Explanation is a decision made readable: why each layer decided as it
// did, which one capped the result, and what would permit the action.
type Explanation struct {
	Decision   *Decision `json:"decision"`
	Resolution string    `json:"resolution"`
	// StartNote says, at start, that an ask read as refused and which rule did it.
	StartNote string `json:"start_note,omitempty"`
	Hint      *Hint  `json:"hint,omitempty"`
}

// Edit is one change to a source file: replace the Length bytes from At
// (a span's start: file, line, col and byte offset) with Insert.
type Edit struct {
	At     diag.Span `json:"at"`
	Length int       `json:"length"`
	Insert string    `json:"insert"`
}

// Hint says what would permit a refused (or asked) action: the smallest
// edit where the project can make it, or the org file and rule that forbid
// it where it cannot.
type Hint struct {
	Text string `json:"text"`
	// ProjectCan is true when the project can permit it; Edits are then the
	// change to make (empty when the configuration file was not given).
	ProjectCan bool   `json:"project_can"`
	Edits      []Edit `json:"edits,omitempty"`
	// Org names the ceiling that forbids it, when the project cannot.
	Org *OrgBlock `json:"org,omitempty"`
}

// OrgBlock is the org rule (or default) that forbids an action.
type OrgBlock struct {
	Name string `json:"name"`
	// At is the rule's span (or the written .default's); nil for an
	// unwritten default.
	At       *diag.Span      `json:"at,omitempty"`
	Rule     string          `json:"rule,omitempty"` // the pattern; "" when its default decided
	Decision config.Decision `json:"decision"`
}

// Explain explains a decision. cfg, when given, is the project's
// configuration, which lets the hint be a concrete edit with a position.
func Explain(d *Decision, cfg *config.Config) *Explanation {
	x := &Explanation{Decision: d, Resolution: Resolution}
	if d.StartRefusal {
		for _, l := range d.Layers {
			if l.Decision == config.Ask {
				what := "its default"
				if l.Rule != nil {
					what = fmt.Sprintf("%s at %s", QuoteRule(l.Rule), l.Rule.Span)
				}
				x.StartNote = fmt.Sprintf("at start nobody can be asked, so the %s layer's ask (%s) reads as refused", layerName(l), what)
				break
			}
		}
	}
	if d.Decision != config.Allow {
		x.Hint = hint(d, cfg)
	}
	return x
}

func layerName(l Layer) string { return l.Spelling() }

// QuoteRule is a rule as explain names it: its pattern quoted, and its
// .args when written ("exec.path.git" .args = .{ "push" }).
func QuoteRule(r *Rule) string {
	if r.Args == "" {
		return strconv.Quote(r.Pattern)
	}
	return strconv.Quote(r.Pattern) + " .args = " + r.Args
}

func hint(d *Decision, cfg *config.Config) *Hint {
	if d.Error != "" {
		return &Hint{Text: "the action name is malformed: " + d.Error}
	}
	// An org that refuses cannot be overridden by the project. An org that
	// asks, in the loop, is the question being put, when it is put (the
	// project does not refuse first).
	for _, l := range d.Layers[1:] {
		if l.Layer != "org" || l.Decision == config.Allow {
			continue
		}
		loopAsk := l.Decision == config.Ask && d.Phase == config.Loop
		if loopAsk && d.Decision != config.Ask {
			continue // the project's refusal decides; its hint follows
		}
		ob := &OrgBlock{Name: l.Name, Decision: l.Decision, At: l.Where()}
		what := fmt.Sprintf("its default is %s", l.Decision)
		if l.Rule != nil {
			ob.Rule = l.Rule.Pattern
			what = fmt.Sprintf("%s is %s at %s", QuoteRule(l.Rule), l.Decision, l.Rule.Span)
		}
		var text string
		switch {
		case loopAsk:
			text = fmt.Sprintf("the org ceiling %q asks before it (%s): a yes to the question permits it this once; the project cannot make it a standing allow, only the org's owners can", l.Name, what)
		case l.Decision == config.Ask:
			text = fmt.Sprintf("the org ceiling %q asks before it (%s), and at start nobody can be asked, so it reads as refused; the project cannot widen an org ceiling, so only the org's owners can permit it", l.Name, what)
		default:
			text = fmt.Sprintf("the org ceiling %q forbids it: %s; the project cannot widen an org ceiling, so only the org's owners can permit it", l.Name, what)
		}
		return &Hint{Text: text, Org: ob}
	}
	project := d.Layers[0]
	h := &Hint{ProjectCan: true}
	lit := strconv.Quote(d.Action)
	if project.Rule != nil && project.Rule.Pattern == d.Action {
		// The deciding rule names the action itself: nothing is more
		// specific, so that rule must change.
		h.Text = fmt.Sprintf("change the rule %s at %s from %s to allow", QuoteRule(project.Rule), project.Rule.Span, project.Rule.Decision)
		if cfg != nil {
			h.Edits = changeRule(cfg, d.Action)
		}
		h.Text += opens(d, project)
		return h
	}
	where := "in " + fileOf(cfg, project)
	if cfg != nil {
		h.Edits = addAllow(cfg, d.Action)
		if len(h.Edits) == 1 {
			where = "at " + h.Edits[0].At.String()
		}
	}
	h.Text = fmt.Sprintf("add %s to .policy.allow %s: a rule naming the action outranks every wildcard", lit, where) + opens(d, project)
	return h
}

// opens says what permitting d would open, where a hint would otherwise
// read as harmless: a program that runs other programs reaches every
// program, and a rule that says why it is there is undone with its reason.
func opens(d *Decision, project Layer) string {
	var out string
	if a, err := action.ParseAction(d.Action); err == nil && action.ExecPath.Has(a) && len(a) == len(action.ExecPath.Fixed())+1 {
		if p := a[len(a)-1]; action.RunsOthers(p) {
			out += fmt.Sprintf("; but %s runs other programs, so allowing it reaches every program, whatever exec.path rules deny: "+
				"allow the programs themselves, or declare what a program runs in its .programs entry's .calls", p)
		}
	}
	if r := project.Rule; r != nil && r.Why != "" {
		out += fmt.Sprintf("; this undoes the rule %s, which says why it is there: %s", QuoteRule(r), safetext.Strip(r.Why, 0))
	}
	return out
}

func fileOf(cfg *config.Config, project Layer) string {
	if cfg != nil {
		return cfg.File
	}
	if project.Rule != nil {
		return project.Rule.Span.File
	}
	return "chock.zon"
}

func editAt(file string, p diag.Pos, length int, insert string) Edit {
	return Edit{At: diag.Span{File: file, Start: p, End: p}, Length: length, Insert: insert}
}

// addAllow inserts the action into .policy.allow, creating the list or the
// policy block as needed.
func addAllow(cfg *config.Config, act string) []Edit {
	lit := strconv.Quote(act)
	p := &cfg.Policy
	switch {
	case p.Allow.Set:
		return []Edit{insertIntoList(cfg.File, p.Allow.Span, lit)}
	case p.Written:
		return []Edit{insertIntoList(cfg.File, p.Span, ".allow = .{"+lit+"}")}
	default:
		return []Edit{insertIntoList(cfg.File, cfg.Span, ".policy = .{ .allow = .{"+lit+"} }")}
	}
}

// insertIntoList puts item first in the container whose span is s: after
// its ".{", followed by ", " unless the container is empty.
func insertIntoList(file string, s diag.Span, item string) Edit {
	// The container is ".{" ... "}": find the "{" (white space or comments
	// may sit between the dot and the brace, so use the span's end for the
	// empty case and the start for the rest).
	width := s.End.Offset - s.Start.Offset
	if width <= 4 { // .{} or .{ }, possibly with a space
		return editAt(file, s.Start, width, ".{ "+item+" }")
	}
	p := s.Start
	p.Offset += 2
	p.Col += 2
	return editAt(file, p, 0, item+", ")
}

// changeRule turns the rule naming act itself into an allow: in .rules its
// .decision is replaced; in a list the entry moves to .policy.allow.
func changeRule(cfg *config.Config, act string) []Edit {
	var edits []Edit
	for _, r := range cfg.Policy.Rules {
		if r.Pattern.String() != act || r.Decision == config.Allow {
			continue
		}
		if r.From == "rules" {
			edits = append(edits, editAt(cfg.File, r.DecisionSpan.Start, r.DecisionSpan.End.Offset-r.DecisionSpan.Start.Offset, ".allow"))
			continue
		}
		// Remove the entry from its list; Apply takes a following comma too.
		edits = append(edits, editAt(cfg.File, r.Span.Start, r.Span.End.Offset-r.Span.Start.Offset, ""))
	}
	// An identical allow rule may already be there; if not, add one.
	for _, r := range cfg.Policy.Rules {
		if r.Pattern.String() == act && r.Decision == config.Allow {
			return edits
		}
	}
	for _, e := range edits {
		if e.Insert == ".allow" {
			return edits
		}
	}
	return append(edits, addAllow(cfg, act)...)
}

// Apply makes edits to src (all in one file), last first so that offsets
// stay valid. A removed list entry takes its following comma with it.
func Apply(src []byte, edits []Edit) []byte {
	sorted := append([]Edit(nil), edits...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].At.Start.Offset > sorted[j].At.Start.Offset })
	out := append([]byte(nil), src...)
	for _, e := range sorted {
		off := e.At.Start.Offset
		end := off + e.Length
		if end > len(out) || off < 0 {
			continue
		}
		if e.Insert == "" && e.Length > 0 {
			// Swallow a comma and the space after it, so the list stays valid.
			k := end
			for k < len(out) && (out[k] == ' ' || out[k] == '\t') {
				k++
			}
			if k < len(out) && out[k] == ',' {
				end = k + 1
				for end < len(out) && out[end] == ' ' {
					end++
				}
			}
		}
		out = append(out[:off], append([]byte(e.Insert), out[end:]...)...)
	}
	return out
}

// line shows text from a policy or a bundle on one line (safetext.Line):
// a .why, a file name or an org name cannot forge a line or drive the
// terminal.
func line(s string) string { return safetext.Line(s) }

// WriteText writes the explanation for a person, with a source excerpt
// under every rule whose file is in src.
func (x *Explanation) WriteText(w io.Writer, src diag.Sources) {
	x.WriteTextWith(w, src, TextOptions{Resolution: true, Hint: true})
}

// TextOptions say what WriteTextWith writes beside the decision and its
// layers.
type TextOptions struct {
	// Resolution writes the resolution rule's paragraph.
	Resolution bool
	// Hint writes what would permit the action. A text the agent reads
	// leaves it out: an agent is never told how to widen its own policy.
	Hint bool
	// Short writes each layer on one line: its .why on that line, no
	// source excerpt.
	Short bool
}

// WriteTextWith writes the explanation as WriteText does, with only what
// o asks beside the layers.
func (x *Explanation) WriteTextWith(w io.Writer, src diag.Sources, o TextOptions) {
	d := x.Decision
	with := ""
	if d.Args != nil {
		qs := make([]string, len(d.Args))
		for i, a := range d.Args {
			qs[i] = strconv.Quote(a)
		}
		with = " with arguments [" + strings.Join(qs, " ") + "]"
	}
	fmt.Fprintf(w, "%s%s at %s: %s\n", line(d.Action), line(with), d.Phase, strings.ToUpper(d.Decision.String()))
	if d.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", line(d.Error))
	}
	switch {
	case o.Resolution:
		fmt.Fprintf(w, "\n  %s\n\n", Resolution)
	case !o.Short:
		fmt.Fprintln(w)
	}
	for _, l := range d.Layers {
		name := layerName(l)
		if l.Rule == nil {
			if l.Layer == "org" && l.DefaultSpan == nil && l.Decision == config.Allow {
				// An org with no default sets no ceiling where no rule of it matches.
				fmt.Fprintf(w, "  %s: no rule matched and it has no default: it leaves the action to the project\n", line(name))
				continue
			}
			at := ""
			if l.DefaultSpan != nil {
				at = " at " + line(l.DefaultSpan.String())
			}
			fmt.Fprintf(w, "  %s: %s (no rule matched: default%s)\n", line(name), l.Decision, at)
			continue
		}
		if o.Short {
			why := ""
			if l.Rule.Why != "" {
				why = " (why: " + line(l.Rule.Why) + ")"
			}
			fmt.Fprintf(w, "  %s: %s by %s at %s%s\n", line(name), l.Decision, line(QuoteRule(l.Rule)), line(l.Rule.Span.String()), why)
			continue
		}
		fmt.Fprintf(w, "  %s: %s by %s at %s\n", line(name), l.Decision, line(QuoteRule(l.Rule)), line(l.Rule.Span.String()))
		if l.Rule.Why != "" {
			fmt.Fprintf(w, "    why: %s\n", line(l.Rule.Why))
		}
		if text, ok := lineOf(src, l.Rule.Span.File, l.Rule.Span.Start.Line); ok {
			var b bytes.Buffer
			sp := l.Rule.Span
			if sp.End.Line != sp.Start.Line || sp.End.Col <= sp.Start.Col {
				sp.End = sp.Start
				sp.End.Col += len(l.Rule.Pattern) + 2
			}
			diag.Excerpt(&b, text, sp)
			for _, ln := range strings.SplitAfter(b.String(), "\n") {
				if ln != "" {
					fmt.Fprintf(w, "  %s", ln)
				}
			}
		}
	}
	if d.CappedBy != nil {
		fmt.Fprintf(w, "  capped by: %s\n", line(config.LayerSpelling("org", *d.CappedBy)))
	} else if l := d.Decider(); l != nil && l.Layer == "org" {
		// The project's default agrees with an org's rule: the rule is
		// what decides, as the project cannot change it.
		fmt.Fprintf(w, "  decided by: %s (its rule; the project's default agrees)\n", line(l.Spelling()))
	}
	if x.StartNote != "" {
		fmt.Fprintf(w, "  at start: %s\n", line(x.StartNote))
	}
	if x.Hint != nil && o.Hint {
		x.Hint.WriteText(w)
	}
}

// WriteText writes the hint and its edits, for a person.
func (h *Hint) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\n  hint: %s\n", line(h.Text))
	for _, e := range h.Edits {
		switch {
		case e.Length == 0:
			fmt.Fprintf(w, "    at %s insert: %s\n", line(e.At.String()), line(e.Insert))
		case e.Insert == "":
			fmt.Fprintf(w, "    at %s remove the entry\n", line(e.At.String()))
		default:
			fmt.Fprintf(w, "    at %s replace with: %s\n", line(e.At.String()), line(e.Insert))
		}
	}
}

func lineOf(src diag.Sources, file string, n int) (string, bool) {
	b, ok := src[file]
	if !ok || n < 1 {
		return "", false
	}
	lines := strings.Split(string(b), "\n")
	if n > len(lines) {
		return "", false
	}
	return strings.TrimSuffix(lines[n-1], "\r"), true
}
