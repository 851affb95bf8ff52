package action

import (
	"strconv"
	"strings"
)

// Arg is one element of a rule's .args: the arguments it stands for at
// its place. Alts nil is "*", any one argument; otherwise the argument is
// one of Alts, literally.
type Arg struct {
	Alts []string
}

// Args are a rule's .args, matched against a call's arguments (its argv
// after argv[0]). The matching is safe both ways, so that a flag before a
// subcommand (git -C x push, git -c a=b push) cannot walk around a rule:
//
//   - an allow's .args match a prefix of the arguments: the first argument
//     is the first element, and so on; anything may follow. An argument
//     the allow did not foresee before the subcommand makes it not match,
//     and a less specific rule decides.
//   - a deny's or an ask's .args match their elements in order anywhere
//     among the arguments (a subsequence): a flag put before, between or
//     after cannot hide the words. An argument that is not known (a word
//     of shell text chock cannot read, Unknown) matches every element.
//
// A decision asked without arguments (chock explain exec.path.git) is the
// action's alone: no rule with .args matches it.
type Args []Arg

// Unknown stands for an argument whose value is not known (a variable in
// shell text): no argument of a real argv holds a NUL byte.
const Unknown = "\x00"

// MaxArgs bounds a rule's .args.
const MaxArgs = 16

// Matches reports whether the arguments match the rule's .args, by prefix
// (an allow's) or as a subsequence (a deny's or an ask's). nil args (not
// known at all) match no rule with .args.
func (a Args) Matches(prefix bool, args []string) bool {
	if args == nil {
		return false
	}
	if prefix {
		if len(args) < len(a) {
			return false
		}
		for i, e := range a {
			if !e.is(args[i], false) {
				return false
			}
		}
		return true
	}
	i := 0
	for _, arg := range args {
		if i == len(a) {
			break
		}
		if a[i].is(arg, true) {
			i++
		}
	}
	return i == len(a)
}

// is reports whether arg is one the element stands for; unknown says an
// Unknown argument stands for any.
func (e Arg) is(arg string, unknown bool) bool {
	if e.Alts == nil || unknown && arg == Unknown {
		return true
	}
	for _, alt := range e.Alts {
		if alt == arg {
			return true
		}
	}
	return false
}

// String is the .args as chock.zon writes them: .{ "push", "*", .{ "-f", "--force" } }.
func (a Args) String() string {
	var b strings.Builder
	b.WriteString(".{ ")
	for i, e := range a {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case e.Alts == nil:
			b.WriteString(`"*"`)
		case len(e.Alts) == 1:
			b.WriteString(strconv.Quote(e.Alts[0]))
		default:
			b.WriteString(".{ ")
			for j, alt := range e.Alts {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Quote(alt))
			}
			b.WriteString(" }")
		}
	}
	b.WriteString(" }")
	return b.String()
}
