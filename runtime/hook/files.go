package hook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
)

// files decides op (read or write) of path p, as fs.OP.NAME under every
// name the file has (absolute, ~/…, relative to the project: what
// action.PathNames gives), for the path as written and, when it is a
// symlink or under one, for where it leads; the strictest decision wins.
func (c Call) files(ctx context.Context, decide Decider, v *Verdict, op, p string) error {
	if strings.ContainsRune(p, 0) || strings.TrimSpace(p) == "" {
		v.ask(fmt.Sprintf("a path chock cannot read (%q)", p))
		return nil
	}
	if strings.HasPrefix(p, "~/") && c.Home != "" {
		p = filepath.Join(c.Home, p[2:])
	}
	if !filepath.IsAbs(p) {
		if c.Cwd == "" {
			v.ask(fmt.Sprintf("the relative path %q with no folder to read it from", p))
			return nil
		}
		p = filepath.Join(c.Cwd, p)
	}
	p = filepath.Clean(p)
	var rel []string
	if c.Project != "" {
		rel = append(rel, filepath.Clean(c.Project))
	}
	paths := []string{p}
	if real, err := resolved(p); err == nil && real != p {
		paths = append(paths, real)
	}
	seen := map[string]bool{}
	for _, q := range paths {
		for _, name := range action.PathNames(q, c.Home, rel, nil) {
			act := "fs." + op + "." + name
			if seen[act] {
				continue
			}
			seen[act] = true
			if _, err := action.ParseAction(act); err != nil {
				v.ask(fmt.Sprintf("%s is not an action chock can decide: %v", act, err))
				continue
			}
			d, err := decide(ctx, act, nil)
			if err != nil {
				return err
			}
			if op == "write" && d.Decision == config.Allow && outside(q, rel) && fallback(d) {
				// In a call the kernel keeps writes to the writable folders;
				// a client's own tool has no such bound, so a write outside
				// the project that only chock's catch-all allows is asked.
				v.askAbout(act, fmt.Sprintf("%s writes outside the project's folder, and no rule of the policy allows it", act))
				continue
			}
			v.add(d)
		}
	}
	return nil
}

// outside says whether p is outside every folder in roots.
func outside(p string, roots []string) bool {
	for _, r := range roots {
		if p == r {
			return false
		}
		if _, ok := action.PathUnder(r, p); ok {
			return false
		}
	}
	return true
}

// fallback says whether d was allowed only by chock's catch-all fs rule
// (fs.write.*, a builtin): no rule of the policy names the path.
func fallback(d *eval.Decision) bool {
	for _, l := range d.Layers {
		if l.Rule != nil && !l.Rule.Builtin {
			return false
		}
	}
	return true
}

// resolved is p with its symlinks followed, the last one too when it
// leads nowhere yet (a write through it creates its target).
func resolved(p string) (string, error) {
	for range 40 {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return "", err
		}
		q := filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(q)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return q, nil
		}
		t, err := os.Readlink(q)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		p = filepath.Clean(t)
	}
	return "", fmt.Errorf("%s: too many symlinks", p)
}

// toolPaths are the paths a file tool's input names: a field holding one
// path or a list of them, or (Codex's apply_patch) a patch whose file
// headers name them.
func toolPaths(tool, field string, input map[string]any) []string {
	switch v := input[field].(type) {
	case string:
		if tool == "apply_patch" {
			return patchPaths(v)
		}
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// patchHeader is a file line of Codex's patch format.
var patchHeader = regexp.MustCompile(`(?m)^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$`)

func patchPaths(patch string) []string {
	var out []string
	for _, m := range patchHeader.FindAllStringSubmatch(patch, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

// askAbout folds an action chock asks about into v, with why.
func (v *Verdict) askAbout(act, why string) {
	first := len(v.Actions) == 0 && v.Reason == ""
	v.Actions = append(v.Actions, act)
	if first || stricter(config.Ask, v.Decision) {
		v.Decision = config.Ask
		v.Reason = "chock: " + why + ", so it is asked"
	}
}
