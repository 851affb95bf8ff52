package compile

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

func BenchmarkParts(b *testing.B) {
	_, out := compileGen(b, 10)
	for _, q := range []string{"data.chock.input_errors", "data.chock.layer.project.matched", "data.chock.layer.project.best", "data.chock.layer.project.result", "data.chock.layers", "data.chock.effective_rank", "data.chock.decision", "data.chock.in_phase", "data.chock.action_well_formed"} {
		b.Run(q, func(b *testing.B) {
			pq := opaQuery(b, out, q)
			in := ast.NewObject(ast.Item(ast.StringTerm("action"), ast.StringTerm("exec.path.tool4")), ast.Item(ast.StringTerm("phase"), ast.StringTerm("loop")))
			b.ReportAllocs()
			for b.Loop() {
				pq.Eval(context.Background(), rego.EvalParsedInput(in))
			}
		})
	}
}
