package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"github.com/chockhq/chock/internal/rounds"
	"html"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
)

func TestStraddle(t *testing.T) {
	var s Set
	s.Add("call1", "TOKEN", "ghp_secretvalue123")
	var out bytes.Buffer
	w := NewWriter(&out, &s)
	for _, chunk := range []string{"token=ghp_sec", "retval", "ue123 done"} {
		w.Write([]byte(chunk))
	}
	w.Close()
	if got := out.String(); got != "token=[secret:TOKEN] done" {
		t.Fatalf("got %q", got)
	}
}

func TestShortValuesAreRefused(t *testing.T) {
	var s Set
	if s.Add("c", "X", "abc") {
		t.Fatal("a 3-byte value must not be added")
	}
}

func TestRemoveSlot(t *testing.T) {
	var s Set
	s.Add("call", "A", "alpha-value")
	s.Add("server", "B", "bravo-value")
	s.Remove("call")
	if got := s.String("alpha-value bravo-value"); got != "alpha-value [secret:B]" {
		t.Fatalf("got %q", got)
	}
}

func TestOverlappingValues(t *testing.T) {
	var s Set
	s.Add("c", "SHORT", "abcd")
	s.Add("c", "LONG", "abcdefgh")
	if got := s.String("xabcdefghx abcdx"); got != "x[secret:LONG]x [secret:SHORT]x" {
		t.Fatalf("got %q", got)
	}
}

// TestRandomChunkings is the property test: output holding values at
// random offsets, written in random chunks, never lets a value through,
// and equals the whole-buffer redaction.
func TestRandomChunkings(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	alphabet := "abcdefghijklmnopqrstuvwxyz0123456789_-=\n "
	randStr := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := 0; round < 2000; round++ {
		var s Set
		var values []string
		for i := 0; i < 1+r.IntN(8); i++ {
			v := randStr(action.MinSecretLen + r.IntN(40))
			values = append(values, v)
			s.Add(fmt.Sprint("slot", i%3), fmt.Sprint("S", i), v)
		}
		var doc strings.Builder
		for i := 0; i < 1+r.IntN(20); i++ {
			doc.WriteString(randStr(r.IntN(60)))
			doc.WriteString(values[r.IntN(len(values))])
		}
		input := []byte(doc.String())
		var out bytes.Buffer
		w := NewWriter(&out, &s)
		maxChunk := []int{3, 8, 50}[round%3]
		for rest := input; len(rest) > 0; {
			n := 1 + r.IntN(min(len(rest), maxChunk))
			w.Write(rest[:n])
			rest = rest[n:]
		}
		w.Close()
		got := out.String()
		for _, v := range values {
			if strings.Contains(got, v) {
				t.Fatalf("round %d: value %q survived in %q", round, v, got)
			}
		}
		if want := s.String(string(input)); got != want {
			t.Fatalf("round %d: stream and whole-buffer redaction differ:\n%q\n%q", round, got, want)
		}
	}
}

// chunked hides bytes.Reader's WriteTo, so io.Copy moves 32 KiB at a time
// as it does from a pipe.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// sink hides bytes.Buffer's ReadFrom: output goes to a plain writer (a
// pipe, a file, the log) in both benchmarks, so neither gets io.Copy's
// one-copy shortcut the other cannot have.
type sink struct{ b *bytes.Buffer }

func (s sink) Write(p []byte) (int, error) { return s.b.Write(p) }

// benchInput is 4 MiB of real text, as tool output is: the project's
// own ZON corpus and documentation, repeated.
func benchInput(b *testing.B) []byte {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "zon", "real", "*.zon"))
	files = append(files, filepath.Join("..", "..", "README.md"), filepath.Join("..", "..", "docs", "lint.md"))
	var text []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		text = append(text, data...)
	}
	out := make([]byte, 0, 4<<20)
	for len(out) < 4<<20 {
		out = append(out, text[:min(len(text), 4<<20-len(out))]...)
	}
	return out
}

// benchSecrets are 8 values shaped like real credentials.
func benchSecrets(r *rand.Rand) []string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	rnd := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alnum[r.IntN(len(alnum))]
		}
		return string(b)
	}
	return []string{"ghp_" + rnd(36), "sk-" + rnd(48), "AKIA" + rnd(16), "xoxb-" + rnd(40), "glpat-" + rnd(20), rnd(32), "npm_" + rnd(36), rnd(24)}
}

// BenchmarkRedact copies 4 MiB of output through a redacting writer with 8
// held values (its throughput; BenchmarkRedactVsCopy holds it to io.Copy).
func BenchmarkRedact(b *testing.B) {
	input := benchInput(b)
	var s Set
	for i, v := range benchSecrets(rand.New(rand.NewPCG(7, 7))) {
		s.Add("call", fmt.Sprint("S", i), v)
	}
	b.SetBytes(int64(len(input)))
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		w := NewWriter(sink{&out}, &s)
		io.Copy(w, chunked{bytes.NewReader(input)})
		w.Close()
	}
}

// BenchmarkRedactVsCopy interleaves, round by round in one process, the
// two: the redacting writer with 8 held values and plain io.Copy over the
// same 4 MiB, and reports the throughput ratio redaction/io.Copy (Copy's
// time over the writer's, the median of the rounds').
func BenchmarkRedactVsCopy(b *testing.B) {
	input := benchInput(b)
	var s Set
	for i, v := range benchSecrets(rand.New(rand.NewPCG(7, 7))) {
		s.Add("call", fmt.Sprint("S", i), v)
	}
	var out bytes.Buffer
	out.Grow(2 * len(input))
	r := rounds.Calls(b, 4,
		func(int) {
			out.Reset()
			io.Copy(sink{&out}, chunked{bytes.NewReader(input)})
		},
		func(int) {
			out.Reset()
			w := NewWriter(sink{&out}, &s)
			io.Copy(w, chunked{bytes.NewReader(input)})
			w.Close()
		})
	r.Report(b, "redact/copy", "copy-ns/op", "redact-ns/op")
}

func FuzzRedact(f *testing.F) {
	f.Add([]byte("hello ghp_secret world"), "ghp_secret", uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, value string, chunk uint8) {
		var s Set
		if !s.Add("c", "V", value) {
			return
		}
		var out bytes.Buffer
		w := NewWriter(&out, &s)
		step := int(chunk) + 1
		for i := 0; i < len(data); i += step {
			w.Write(data[i:min(i+step, len(data))])
		}
		w.Close()
		if bytes.Contains(out.Bytes(), []byte(value)) && !bytes.Contains([]byte("[secret:V]"), []byte(value)) {
			// A value can reappear only by being formed across a replacement.
			if !bytes.Equal(out.Bytes(), s.Bytes(data)) {
				t.Fatalf("value %q survived: %q", value, out.Bytes())
			}
		}
	})
}

// TestFormsMaskEncodings: a value inside a longer base64 text at every
// alignment, and its JSON-, URI- and XML-escaped forms, are all masked.
func TestFormsMaskEncodings(t *testing.T) {
	values := []string{"ghp_LEAKCHECK0123456789abcdef", `p@ss w"ord<&>/+?=`, "tiny", "ünïcødé-sécret\t\n"}
	for _, v := range values {
		s := &Set{}
		s.Add("c1", "K", v)
		var texts []string
		for pre := 0; pre < 6; pre++ {
			for post := 0; post < 4; post++ {
				b := append(append(bytes.Repeat([]byte{'x'}, pre), v...), bytes.Repeat([]byte{0xfe}, post)...)
				texts = append(texts, base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b))
			}
		}
		j, _ := json.Marshal(map[string]string{"k": v})
		texts = append(texts, string(j), "https://x.test/?q="+url.QueryEscape(v), "/p/"+url.PathEscape(v))
		var x bytes.Buffer
		xml.EscapeText(&x, []byte(v))
		texts = append(texts, "<a>"+x.String()+"</a>", html.EscapeString(v))
		for _, text := range texts {
			got := s.String(text)
			if !strings.Contains(got, "[secret:K]") {
				t.Errorf("value %q: %q not masked: %q", v, text, got)
			}
		}
	}
}

// TestAddTwice: a value added again (the next call given it) is held once.
func TestAddTwice(t *testing.T) {
	s := &Set{}
	s.Add("c1", "K", "value-1234")
	n := s.Len()
	s.Add("c2", "K", "value-1234")
	if s.Len() != n {
		t.Fatalf("%d entries after adding the value again, want %d", s.Len(), n)
	}
}

// TestStringAndRedactedShare: a text holding no value comes back as it is
// (String and Redacted copy nothing), and one holding values as Bytes
// redacts it.
func TestStringAndRedactedShare(t *testing.T) {
	var s Set
	s.Add("call", "A", "sekrit-value-1")
	s.Add("call", "B", "other-value-22")
	for _, in := range []string{"", "plain text", "x sekrit-value-1 y", "sekrit-value-1", "other-value-22sekrit-value-1", "sekrit-value-"} {
		want := string(s.Bytes([]byte(in)))
		if got := s.String(in); got != want {
			t.Errorf("String(%q) = %q, Bytes gives %q", in, got, want)
		}
		b := []byte(in)
		got, changed := s.Redacted(b)
		if string(got) != want || changed != (want != in) {
			t.Errorf("Redacted(%q) = %q, %v", in, got, changed)
		}
		if !changed && len(b) > 0 && &got[0] != &b[0] {
			t.Errorf("Redacted(%q) copied a clean text", in)
		}
	}
	if n := testing.AllocsPerRun(100, func() { s.String("a clean line of output") }); n != 0 {
		t.Errorf("String of a clean text: %v allocations", n)
	}
}

// TestLowerCaseInTextsOnly: the lower-cased value is masked in the texts
// chock writes (String), where chock lower-cases a host itself, and not
// searched for in a stream (Writer): a program's output is not
// lower-cased by chock.
func TestLowerCaseInTextsOnly(t *testing.T) {
	var s Set
	s.Add("c", "K", "ghp_ABCdef0123456789XYZ")
	lower := "net.fetch.ghp_abcdef0123456789xyz.example"
	if got := s.String(lower); got != "net.fetch.[secret:K].example" {
		t.Errorf("String: %q", got)
	}
	var out bytes.Buffer
	w := NewWriter(&out, &s)
	io.WriteString(w, "exact ghp_ABCdef0123456789XYZ, "+lower)
	w.Close()
	if got := out.String(); got != "exact [secret:K], "+lower {
		t.Errorf("Writer: %q", got)
	}
}
