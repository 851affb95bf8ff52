package sessionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

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

// TestValuesAsEncodingJSON: the values an event holds are written as
// encoding/json writes them (without HTML escaping).
func TestValuesAsEncodingJSON(t *testing.T) {
	l := &Log{}
	values := []any{nil, "", "plain", "quote \" back \\ slash", "ctl \x00\x01\x1f\x7f \b\f\n\r\t", "<html> & é ✓ \u2028\u2029 \U0001F600",
		"bad \xff\xfe utf-8 \xed\xa0\x80", true, false, 0, -7, int8(-8), int16(300), int32(-70000), int64(1) << 62, uint(7), uint8(255), uint16(65535),
		uint32(1) << 31, uint64(1) << 63, time.Duration(1500), 0.0, 1.5, -2.25, 1e-7, 123456789.0, 1e21, 1e20, 3.14159, float32(1.1), float32(1e-7),
		[]string{"a", "b\n"}, []string(nil), []any{1, "x", nil, []any{true}}, map[string]any{"b": 1, "a": []string{"z"}, "c": map[string]any{}},
		map[string]string{"k2": "v", "k1": "w"}, errors.New("an error \"quoted\""), json.Number("12")}
	for _, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		w := strings.TrimSuffix(want.String(), "\n")
		if e, ok := v.(error); ok {
			w = strings.TrimSuffix(jsonString(t, e.Error()), "\n")
		}
		if got := string(l.appendValue(nil, v)); got != w {
			t.Errorf("%#v: %s, encoding/json %s", v, got, w)
		}
	}
	if got := string(l.appendValue(nil, math.NaN())); got != "null" {
		t.Errorf("NaN: %s", got)
	}
	// An event of the usual values costs no allocation.
	dir := t.TempDir()
	var set redact.Set
	set.Add("s", "TOKEN", "tok-SECRETVALUE-1234")
	lg, err := Create(dir, "a", &set)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	fields := []Field{F("action", "mcp.helper.tool.echo"), F("decision", "allow"), F("argv", []string{"a", "b"}), F("exit", 0), F("timed_out", false)}
	lg.Event("tool.call", true, fields...)
	if n := testing.AllocsPerRun(100, func() { lg.Event("tool.call", true, fields...) }); n > 0 {
		t.Errorf("an event: %v allocations", n)
	}
}

func jsonString(t *testing.T, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
