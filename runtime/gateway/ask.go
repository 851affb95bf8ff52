package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An ask reaches a person this way: before the call runs, the gateway
// works out the questions the chain would put (Session.Questions) and,
// when the client declared elicitation, puts them to the client: as
// elicitation/create requests (2025-11-25 and before), or as an
// input_required result whose answers come back with the call once more
// (2026-07-28, where a server may not send requests of its own). The
// answers go with the call's context to the session's asker, which gives
// each to the one question it answers, once; a question nobody foresaw,
// or a client that cannot be asked, goes to the terminal with --ask
// prompt and is refused otherwise. An answer holds for that one call.

// notForeseen says why a question the client could have been asked was
// not: it was not among those worked out before the call ran.
const notForeseen = "the question was not foreseen before the call ran, so the client was not asked it (--ask prompt asks such a question at chock's terminal)"

// maxPending bounds the input_required rounds a connection keeps waiting
// for their answers; the oldest is forgotten first.
const maxPending = 64

// answers are the answers a call carries: one per action, each taken once.
type answers struct {
	mu     sync.Mutex
	yes    map[string]bool
	failed map[string]error
	// why says why there were none, for a question that finds none.
	why string
}

func (a *answers) put(act string, yes bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if a.failed == nil {
			a.failed = map[string]error{}
		}
		a.failed[act] = err
		return
	}
	if a.yes == nil {
		a.yes = map[string]bool{}
	}
	a.yes[act] = yes
}

// take gives the answer to act, once.
func (a *answers) take(act string) (yes bool, err error, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err, ok := a.failed[act]; ok {
		delete(a.failed, act)
		return false, err, true
	}
	yes, ok = a.yes[act]
	delete(a.yes, act)
	return yes, nil, ok
}

type answersKey struct{}

func withAnswers(ctx context.Context, a *answers) context.Context {
	return context.WithValue(ctx, answersKey{}, a)
}

// asker is a connection's runtime.Asker.
type asker struct{ c *conn }

// Ask answers q from the answers the call carries, or at the terminal
// (--ask prompt), or not at all: the error says why, and the chain words
// the refusal with it.
func (k *asker) Ask(ctx context.Context, q runtime.Question) (bool, error) {
	g := k.c.g
	a, _ := ctx.Value(answersKey{}).(*answers)
	if a != nil {
		if yes, err, ok := a.take(q.Action); ok {
			return yes, err
		}
	}
	switch g.o.Ask {
	case AskDeny:
		return false, errors.New("chock mcp serve runs with --ask deny")
	case AskPrompt:
		g.promptMu.Lock()
		defer g.promptMu.Unlock()
		v := g.view.Load()
		g.o.Prompter.Sources = v.src
		if q.Explanation != nil {
			q.Explanation = eval.Explain(q.Explanation.Decision, v.cfg)
		}
		return g.o.Prompter.Ask(ctx, q)
	}
	why := "the client declared no elicitation, so it cannot be asked, and chock mcp serve runs with --ask elicit (--ask prompt asks at chock's terminal)"
	if a != nil && a.why != "" {
		why = a.why
	}
	return false, errors.New(why)
}

// canElicit says whether the client of req can be asked: it declared
// elicitation, in form mode (a client that declares neither mode takes
// forms), and --ask is not deny.
func (c *conn) canElicit(req *mcp.CallToolRequest) bool {
	if c.g.o.Ask == AskDeny {
		return false
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// modern says whether req speaks 2026-07-28 or later, where answers come
// back with the call.
func modern(req *mcp.CallToolRequest) bool { return req.ProtocolVersion() >= "2026-07-28" }

// answers are the answers call carries: those of an input_required round
// it completes, or those the client gave to the questions put to it now.
// res, when not nil, is the input_required result to answer with instead
// of running the call.
func (c *conn) answers(ctx context.Context, req *mcp.CallToolRequest, call *runtime.Call) (*answers, *mcp.CallToolResult) {
	a := &answers{}
	if req.Params.RequestState != "" {
		c.takeRound(req, a)
		return a, nil
	}
	if !c.canElicit(req) {
		return a, nil
	}
	a.why = notForeseen
	qs, err := c.sess.Questions(ctx, call)
	if err != nil || len(qs) == 0 {
		return a, nil
	}
	if modern(req) {
		return a, c.inputRequired(req, qs)
	}
	if req.Session == nil {
		return a, nil
	}
	for _, q := range qs {
		yes, err := c.elicit(ctx, req.Session, q)
		a.put(q.Action, yes, err)
	}
	return a, nil
}

// question is the form an ask is put as: the explanation chock explain
// gives, without the hint (it passes through the agent's client, and the
// answer is yes or no this once, not an edit), and one yes or no.
func (c *conn) question(q runtime.Question) *mcp.ElicitParams {
	v := c.g.view.Load()
	var b bytes.Buffer
	fmt.Fprintf(&b, "chock: the policy asks before %s.\n\n", q.Action)
	if q.Explanation != nil {
		eval.Explain(q.Explanation.Decision, v.cfg).WriteTextWith(&b, v.src, eval.TextOptions{Resolution: true})
	}
	fmt.Fprintf(&b, "\nAllow %s this once?", q.Action)
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"allow": map[string]any{"type": "boolean", "title": "Allow " + q.Action + " this once", "default": false},
			},
			"required": []string{"allow"},
		},
	}
}

// yes reads an answer to question: accepted with allow true.
func yes(r *mcp.ElicitResult) bool {
	if r == nil || r.Action != "accept" {
		return false
	}
	v, _ := r.Content["allow"].(bool)
	return v
}

// elicit puts q to the client at once (2025-11-25 and before).
func (c *conn) elicit(ctx context.Context, ss *mcp.ServerSession, q runtime.Question) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	res, err := ss.Elicit(ctx, c.question(q))
	if err != nil {
		return false, fmt.Errorf("asking the client failed: %v", err)
	}
	return yes(res), nil
}

// pending is an input_required round waiting for its answers: the call it
// belongs to and the questions, by input request id.
type pending struct {
	tool    string
	args    [32]byte
	actions []string
}

func requestKey(i int) string { return fmt.Sprintf("ask-%d", i+1) }

// inputRequired is the result that puts qs to a 2026-07-28 client: one
// elicitation each, and a request state only this connection can redeem,
// once, for this call.
func (c *conn) inputRequired(req *mcp.CallToolRequest, qs []runtime.Question) *mcp.CallToolResult {
	var nonce [16]byte
	rand.Read(nonce[:])
	state := hex.EncodeToString(nonce[:])
	p := &pending{tool: req.Params.Name, args: sha256.Sum256(req.Params.Arguments)}
	ir := mcp.InputRequestMap{}
	for i, q := range qs {
		p.actions = append(p.actions, q.Action)
		ir[requestKey(i)] = c.question(q)
	}
	c.mu.Lock()
	c.pending[state] = p
	c.order = append(c.order, state)
	for len(c.order) > maxPending {
		delete(c.pending, c.order[0])
		c.order = c.order[1:]
	}
	c.mu.Unlock()
	return &mcp.CallToolResult{InputRequests: ir, RequestState: state}
}

// takeRound redeems the input_required round req completes: its answers,
// when the state is one this connection gave for this very call.
func (c *conn) takeRound(req *mcp.CallToolRequest, a *answers) {
	c.mu.Lock()
	p := c.pending[req.Params.RequestState]
	delete(c.pending, req.Params.RequestState)
	for i, s := range c.order {
		if s == req.Params.RequestState {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if p == nil || p.tool != req.Params.Name || p.args != sha256.Sum256(req.Params.Arguments) {
		a.why = "the call came back with answers chock did not ask for (an unknown, used or expired request state, or another call's)"
		return
	}
	a.why = notForeseen
	for i, act := range p.actions {
		r, _ := req.Params.InputResponses[requestKey(i)].(*mcp.ElicitResult)
		a.put(act, yes(r), nil)
	}
}
