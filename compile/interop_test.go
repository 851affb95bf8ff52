package compile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/chockhq/chock/internal/stockopa"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// opaBinary is the stock opa command (stockopa.Binary).
func opaBinary(t *testing.T) string { return stockopa.Binary(t) }

// interopCases are the inputs stock OPA must answer as the embedded engine
// does: random actions of every test policy at both phases, malformed
// inputs, and secrets queries.
func interopCases(in Input) []any {
	var cases []any
	for i, a := range randomActions(in, 300, 11) {
		phase := "loop"
		if i%2 == 0 {
			phase = "start"
		}
		cases = append(cases, map[string]any{"action": a, "phase": phase})
	}
	cases = append(cases, map[string]any{}, map[string]any{"action": "a..b"}, map[string]any{"action": "x", "phase": "later"}, "junk")
	return cases
}

func embedded(t *testing.T, out *Output, query string, cases []any) []any {
	pq := opaQuery(t, out, query)
	var res []any
	for _, c := range cases {
		res = append(res, normalize(t, evalJSON(t, pq, c)))
	}
	return res
}

// TestStockOPA runs the compiled bundle in the opa command: opa check
// --strict, opa eval -b and opa run --server must accept it and answer
// every case exactly as the embedded engine does.
func TestStockOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the opa command")
	}
	opa := opaBinary(t)
	for _, p := range testPolicies(t) {
		t.Run(p.name, func(t *testing.T) {
			in := load(t, p)
			out, err := Compile(in)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "bundle.tar.gz")
			priv, pub := rsaKeys(t)
			var buf bytes.Buffer
			if err := out.WriteBundle(&buf, &Key{Material: priv}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			pubPath := filepath.Join(dir, "pub.pem")
			os.WriteFile(pubPath, pub, 0o600)

			if b, err := exec.Command(opa, "check", "--strict", "-b", path).CombinedOutput(); err != nil {
				t.Fatalf("opa check --strict: %v\n%s", err, b)
			}

			cases := interopCases(in)
			want := embedded(t, out, "data.chock.decision", cases)
			// opa eval: all cases in one process, through with.
			inPath := filepath.Join(dir, "input.json")
			data, _ := json.Marshal(map[string]any{"cases": cases})
			os.WriteFile(inPath, data, 0o600)
			cmd := exec.Command(opa, "eval", "--format", "json", "-b", path, "-i", inPath,
				"[d | some c in input.cases; d := data.chock.decision with input as c]")
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("opa eval: %v", err)
			}
			var ev struct {
				Result []struct {
					Expressions []struct{ Value []any } `json:"expressions"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &ev); err != nil || len(ev.Result) != 1 {
				t.Fatalf("opa eval output: %v %s", err, b)
			}
			got := ev.Result[0].Expressions[0].Value
			for i := range cases {
				if g := normalize(t, got[i]); !reflect.DeepEqual(g, want[i]) {
					t.Fatalf("opa eval, case %v:\n opa      %v\n embedded %v", cases[i], g, want[i])
				}
			}

			// opa run --server, verifying the signature, over REST on 127.0.0.1.
			srv := stockopa.Start(t, nil, "--bundle", path,
				"--verification-key", pubPath, "--verification-key-id", DefaultKeyID, "--signing-alg", "RS256")
			addr := srv.Addr
			for i, c := range cases {
				if g := normalize(t, restDecision(t, addr, c)); !reflect.DeepEqual(g, want[i]) {
					t.Fatalf("opa run, case %v:\n opa      %v\n embedded %v", c, g, want[i])
				}
			}
			// The secrets query too.
			for _, c := range []any{map[string]any{"action": "exec.path.gh"}, map[string]any{"server": "notion"}} {
				w := normalize(t, embeddedAny(t, out, "data.chock.secrets", c))
				body, _ := json.Marshal(map[string]any{"input": c})
				resp, err := http.Post("http://"+addr+"/v1/data/chock/secrets", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				var r struct{ Result any }
				json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if g := normalize(t, r.Result); !reflect.DeepEqual(g, w) {
					t.Fatalf("secrets %v: opa %v, embedded %v", c, g, w)
				}
			}
		})
	}
}

func embeddedAny(t *testing.T, out *Output, query string, input any) any {
	pq := opaQuery(t, out, query)
	v, _ := toValue(input)
	rs, err := pq.Eval(context.Background(), evalInput(v))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%s: %v %v", query, rs, err)
	}
	return rs[0].Expressions[0].Value
}

// restDecision asks data.chock.decision of the opa run --server at addr
// over its REST API, with input.
func restDecision(t *testing.T, addr string, input any) any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"input": input})
	resp, err := http.Post("http://"+addr+"/v1/data/chock/decision", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result any `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r.Result
}

var _ = fmt.Sprint
