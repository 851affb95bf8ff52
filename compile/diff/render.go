package diff

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/chockhq/chock/compile/config"
)

// notShown is how many literals a <not ...> names in text and markdown;
// JSON names them all.
const notShown = 8

// An entry is one line of the text and markdown output: a region's
// decision changes (phases with the same old and new folded into one),
// a secret offer, a server.
type entry struct {
	kind    string
	what    string // region or subject
	change  string // "deny -> allow"
	phases  []config.Phase
	witness string
	old     *Rule
	new     *Rule
	note    string // what else there is to say (where the entry is)
}

// entries lists the report's changes in order: decisions region by
// region, then secret offers, then servers.
func (r *Report) entries() []entry {
	var out []entry
	for i := 0; i < len(r.Changes); {
		c := r.Changes[i]
		e := entry{kind: c.Kind, what: c.Where(notShown), change: fmt.Sprintf("%s -> %s", c.Old, c.New),
			phases: []config.Phase{c.Phase}, witness: c.Witness, old: &r.Changes[i].OldRule, new: &r.Changes[i].NewRule}
		i++
		// The same region's other phase, with the same change, folds in.
		if i < len(r.Changes) && r.Changes[i].Witness == c.Witness && r.Changes[i].Old == c.Old && r.Changes[i].New == c.New &&
			r.Changes[i].Where(-1) == c.Where(-1) {
			e.phases = append(e.phases, r.Changes[i].Phase)
			i++
		}
		out = append(out, e)
	}
	for _, s := range r.Secrets {
		to := "server " + s.Server
		if s.Region != nil {
			c := Change{Region: *s.Region, Except: s.Except}
			to = c.Where(notShown)
		}
		for _, o := range s.Added {
			out = append(out, entry{kind: Widened, what: fmt.Sprintf("secret %s (%s %s) newly offered to %s", o.Name, o.Bind, o.Variable, to),
				witness: s.Witness, note: fmt.Sprintf("its entry .to = %q at %s", o.To, o.Span)})
		}
		for _, o := range s.Removed {
			out = append(out, entry{kind: Narrowed, what: fmt.Sprintf("secret %s (%s %s) no longer offered to %s", o.Name, o.Bind, o.Variable, to),
				witness: s.Witness, note: fmt.Sprintf("its entry .to = %q was at %s", o.To, o.Span)})
		}
	}
	for _, s := range r.Servers {
		e := entry{kind: s.Kind}
		switch s.Change {
		case "added":
			e.what, e.note = fmt.Sprintf("server %s added: %s", s.Name, s.New.what()), "at "+s.New.Span.String()
		case "removed":
			e.what, e.note = fmt.Sprintf("server %s removed: %s", s.Name, s.Old.what()), "was at "+s.Old.Span.String()
		default:
			e.what, e.note = fmt.Sprintf("server %s changed: %s -> %s", s.Name, s.Old.what(), s.New.what()), "at "+s.New.Span.String()
		}
		out = append(out, e)
	}
	for _, p := range r.Programs {
		out = append(out, entry{kind: p.Kind, what: fmt.Sprintf("program %s %s", p.Name, p.Change), note: "at " + p.Span.String()})
	}
	for _, a := range r.Args {
		e := entry{kind: a.Kind}
		switch {
		case a.Old == nil:
			e.what, e.note = fmt.Sprintf("%s rule %s added: %s", a.Layer, a.Rule, a.New), "at "+a.Span.String()
		case a.New == nil:
			e.what, e.note = fmt.Sprintf("%s rule %s removed: it was %s", a.Layer, a.Rule, a.Old), "was at "+a.Span.String()
		default:
			e.what, e.change, e.phases, e.note = fmt.Sprintf("%s rule %s", a.Layer, a.Rule), fmt.Sprintf("%s -> %s", a.Old, a.New), []config.Phase{config.Loop, config.Start}, "at "+a.Span.String()
		}
		out = append(out, e)
	}
	return out
}

func phaseText(ps []config.Phase) string {
	if len(ps) == 2 {
		return "at loop and start"
	}
	return "at " + ps[0].String()
}

func label(kind string) string {
	if kind == Widened {
		return "WIDENED "
	}
	return "narrowed"
}

// summary is the last line: how many entries widened and narrowed, and
// how many regions were compared.
func (r *Report) summary() string {
	w, n := 0, 0
	for _, e := range r.entries() {
		if e.kind == Widened {
			w++
		} else {
			n++
		}
	}
	if w+n == 0 {
		return fmt.Sprintf("no change in what the policy decides, offers or runs (%d regions compared)", r.Regions)
	}
	return fmt.Sprintf("%d widened, %d narrowed (%d regions compared)", w, n, r.Regions)
}

// WriteText writes the report for a terminal or a CI log: one entry a
// change, WIDENED or narrowed, the region as <not ...> style text, its
// phases folded where they changed alike, a witness, and the rule on each
// side; then a summary line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, e := range r.entries() {
		fmt.Fprintf(&b, "%s %s", label(e.kind), e.what)
		if e.change != "" {
			fmt.Fprintf(&b, "  %s %s", e.change, phaseText(e.phases))
		}
		if e.witness != "" {
			fmt.Fprintf(&b, "  e.g. %s", e.witness)
		}
		b.WriteByte('\n')
		if e.old != nil {
			fmt.Fprintf(&b, "    was: %s\n    now: %s\n", e.old, e.new)
		}
		if e.note != "" {
			fmt.Fprintf(&b, "    %s\n", e.note)
		}
	}
	b.WriteString(r.summary() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the report as a pull-request comment: a heading
// with the counts and a table of the changes, widened first.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	es := r.entries()
	slices.SortStableFunc(es, func(a, b entry) int {
		if a.kind == b.kind {
			return 0
		}
		if a.kind == Widened {
			return -1
		}
		return 1
	})
	wn := 0
	for _, e := range es {
		if e.kind == Widened {
			wn++
		}
	}
	nn := len(es) - wn
	if wn+nn == 0 {
		fmt.Fprintf(&b, "### chock diff: no change\n\nNothing the policy decides, offers or runs changed (%d regions compared).\n", r.Regions)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "### chock diff: %d widened, %d narrowed\n\n", wn, nn)
	b.WriteString("| | change | phases | e.g. | was | now |\n|---|---|---|---|---|---|\n")
	for _, e := range es {
		kind := "narrowed"
		if e.kind == Widened {
			kind = "**WIDENED**"
		}
		what, phases, was, now := cell(e.what), "", "", ""
		if e.change != "" {
			what = code(e.what) + " " + cell(strings.Replace(e.change, "->", "→", 1))
			phases = strings.TrimPrefix(phaseText(e.phases), "at ")
			was, now = ruleCell(e.old), ruleCell(e.new)
		} else {
			now = cell(e.note)
		}
		wit := ""
		if e.witness != "" {
			wit = code(e.witness)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", kind, what, phases, wit, was, now)
	}
	fmt.Fprintf(&b, "\n%d regions of the action space compared; `chock diff` is exact: each row's region changed as shown on every action in it.\n", r.Regions)
	_, err := io.WriteString(w, b.String())
	return err
}

func ruleCell(r *Rule) string {
	if r.Default {
		return fmt.Sprintf("%s default %s (%s)", code(r.Layer), r.Decision, code(r.Span.String()))
	}
	return fmt.Sprintf("%s %s %s (%s)", code(r.Layer), code(r.Pattern), r.Decision, code(r.Span.String()))
}

// code is s as a code span in a table cell: a | escaped (GitHub reads \|
// in a cell even inside a code span), a backtick in s fenced by two.
func code(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// cell is plain text in a table cell.
func cell(s string) string {
	r := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`")
	return r.Replace(s)
}
