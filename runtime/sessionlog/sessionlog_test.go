package sessionlog

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/chockhq/chock/runtime/redact"
)

func TestLog(t *testing.T) {
	dir := t.TempDir()
	var set redact.Set
	set.Add("s", "TOKEN", "tok-SECRETVALUE-1234")
	l, err := Create(dir, "s1", &set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, "s1", &set); err == nil {
		t.Fatal("a session log was opened twice")
	}
	l.Event("session.start", true, F("policy", "abc"))
	l.Event("tool.result", true, F("stdout", "value tok-SECRETVALUE-1234 here"), F("argv", []string{"a", "tok-SECRETVALUE-1234"}),
		F("nested", map[string]any{"x": []any{"tok-SECRETVALUE-1234"}}), F("err", errors.New("failed with tok-SECRETVALUE-1234")))
	l.Event("secret.used", false, F("name", "TOKEN"), F("action", "exec.path.gh"), F("bind", "env"), F("variable", "TOKEN"))
	l.Event("session.end", true)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(l.Path)
	if strings.Contains(string(raw), "SECRETVALUE") {
		t.Fatalf("a value reached the log:\n%s", raw)
	}
	if fi, _ := os.Stat(l.Path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	lines, _ := ReadLines(dir, "s1")
	if string(lines[2]) != `{"kind":"secret.used","name":"TOKEN","action":"exec.path.gh","bind":"env","variable":"TOKEN"}` {
		t.Errorf("secret.used line: %s", lines[2])
	}
	infos, err := List(dir)
	if err != nil || len(infos) != 1 || !infos[0].Ended || infos[0].Revision != "abc" || infos[0].Events != 4 {
		t.Fatalf("list: %+v %v", infos, err)
	}
	if _, err := Read(dir, "../etc/passwd"); err == nil {
		t.Error("a path was accepted as a session id")
	}
	if err := l.Event("late", true); err == nil {
		t.Error("an event after Close was accepted")
	}
}
