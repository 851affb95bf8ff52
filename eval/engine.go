package eval

// This file is the engine: what decides (a prepared policy here, or a
// remote OPA), its caches, and the calls a caller makes (Decide, Secrets,
// Swap). Preparing a policy is in prepare.go, the decision types and how
// a decision is worked out in decision.go, and the contract with the
// compiled Rego (its inputs and the shape of its answers) in wire.go.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Engine decides actions against one compiled policy. It is safe for
// concurrent use; Swap replaces the policy without stopping decisions.
//
// An engine decides in this process, on a policy prepared here (New,
// FromOutput, Swap, SwapCompiled), or asks a running OPA (NewRemote). Either
// way, a decision that cannot be made is an error wrapping
// ErrUnavailable, never an allow.
type Engine struct {
	cur atomic.Pointer[prepared]
	// remote, when set, answers every decision and secrets query instead
	// of a prepared policy: a running opa run --server.
	remote remote
	// logs, when set, is told every decision this engine makes here.
	logs DecisionLogger
	// pinned says the engine is a Pinned view: Swap refuses.
	pinned bool
	// remoteArgs are a remote policy's ArgsPatterns, for the revision
	// they were read at.
	remoteArgs atomic.Pointer[revisionPatterns]
}

// revisionPatterns are the patterns of the rules with .args of one
// revision.
type revisionPatterns struct {
	rev  string
	pats []action.Pattern
}

// ArgsPatterns are the patterns of the policy's rules with .args (of
// every layer), worked out once per policy revision: a call of an action
// none matches is decided without its arguments.
func (e *Engine) ArgsPatterns() []action.Pattern {
	if e.remote == nil {
		return e.cur.Load().argsPatterns()
	}
	rev := e.Revision()
	if c := e.remoteArgs.Load(); c != nil && c.rev == rev {
		return c.pats
	}
	c := &revisionPatterns{rev: rev, pats: argsPatterns(e.remote.meta())}
	e.remoteArgs.Store(c)
	return c.pats
}

// remote is a policy this process does not hold: it is asked over the
// network for every answer.
type remote interface {
	decide(ctx context.Context, action string, args []string, phase config.Phase) (*Decision, error)
	decideMany(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error)
	secrets(ctx context.Context, t Target) ([]Secret, error)
	meta() Meta
	revision() string
}

// ErrUnavailable is wrapped by every error that means no policy could
// answer: a remote OPA that does not answer in time, a bundle service
// that has not delivered a policy, an activated bundle that is not
// chock's. A caller refuses what it asked about.
var ErrUnavailable = errors.New("no policy could decide")

// DecisionLogger is told every decision an engine makes in this process:
// OPA's decision-log plugin, through the fleet package.
type DecisionLogger interface {
	LogDecision(ctx context.Context, ev DecisionEvent) error
}

// DecisionEvent is one decision, as a decision log records it.
type DecisionEvent struct {
	// ID is the decision's decision_id, which the session log carries too.
	ID string
	// Path is the query's path, "chock/decision".
	Path string
	// Input is the decision's input, {"action": ..., "phase": ...}.
	Input map[string]any
	// Decision is chock's decision object (data.chock.decision's shape).
	Decision *Decision
	// Revisions are the revisions of the bundles that decided, by bundle
	// name.
	Revisions map[string]string
	Time      time.Time
}

// prepared is one loaded policy: its prepared queries and what it says of
// itself.
type prepared struct {
	// core is data.chock.core: per layer, the numbers of the rules that
	// match an action; Go fills the decision in from meta.
	core     rego.PreparedEvalQuery
	secrets  rego.PreparedEvalQuery
	revision string
	// revisions are the revisions of the bundles it was built from, by
	// bundle name, for decision logs.
	revisions map[string]string
	meta      Meta
	// A decision is a pure function of the bundle and the input, so
	// answers are kept per prepared policy (a Swap starts afresh).
	decisions cache[decisionKey, *Decision]
	offers    cache[Target, []Secret]
	// failure, when set, is why this policy cannot decide (an activated
	// bundle that is not chock's): every decision fails with it.
	failure error
	// only, when set, are the only actions its modules decide
	// (compile.Input.Only): any other is refused, never decided by a
	// module that lacks the rules that match it.
	only map[string]bool
	// args are the patterns of the rules with .args, worked out once.
	args     []action.Pattern
	argsOnce sync.Once
	// rules finds the rules matching an action, for batches (decideMany).
	rules     *ruleIndex
	indexOnce sync.Once
}

// argsPatterns are argsPatterns of the policy's meta, worked out once.
func (p *prepared) argsPatterns() []action.Pattern {
	p.argsOnce.Do(func() { p.args = argsPatterns(p.meta) })
	return p.args
}

// argsPatterns are the patterns of m's rules with .args.
func argsPatterns(m Meta) []action.Pattern {
	var out []action.Pattern
	for _, l := range m.Layers {
		for _, r := range l.Rules {
			if r.Args == "" {
				continue
			}
			if pat, err := action.ParsePattern(r.Pattern); err == nil {
				out = append(out, pat)
			}
		}
	}
	return out
}

// matchesAny says whether a pattern of pats matches action a.
func matchesAny(pats []action.Pattern, a string) bool {
	if len(pats) == 0 {
		return false
	}
	act, err := action.ParseAction(a)
	return err == nil && slices.ContainsFunc(pats, func(p action.Pattern) bool { return p.Matches(act) })
}

type decisionKey struct {
	action string
	phase  config.Phase
	// args are the call's arguments, each with its length before it
	// (argsKey), when the policy has rules that read them.
	args string
}

// argsKey is arguments as one string no other arguments give: their
// lengths and bytes, or past 256 bytes that string's SHA-256 (a cache of
// 4096 decisions holds no megabytes of argv).
func argsKey(args []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for _, a := range args {
		b.WriteString(strconv.Itoa(len(a)))
		b.WriteByte(':')
		b.WriteString(a)
	}
	if b.Len() <= 256 {
		return b.String()
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "#" + string(sum[:])
}

// cacheSize bounds each cache; a full cache is emptied and refilled.
const cacheSize = 4096

// cache is a small bounded map safe for concurrent use.
type cache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

func (c *cache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *cache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}

// New prepares an engine from a bundle.
func New(ctx context.Context, b *bundle.Bundle) (*Engine, error) {
	return NewBundles(ctx, b)
}

// NewBundles prepares an engine from several bundles loaded side by side,
// as opa run -b A -b B loads them: their modules compiled together, their
// data in one store. Bundles whose roots overlap are refused, as OPA
// refuses them. A project bundle that links orgs by name is given with
// the orgs' bundles; one whose org is missing is refused with an error
// wrapping ErrUnavailable that names it.
func NewBundles(ctx context.Context, bs ...*bundle.Bundle) (*Engine, error) {
	p, err := prepare(ctx, bs)
	if err != nil {
		return nil, err
	}
	e := &Engine{}
	e.cur.Store(p)
	return e, nil
}

// FromOutput prepares an engine straight from a compilation, on its one
// compile: nothing is compiled again. The modules are this chock's own, so
// the probe checks only the contract of data.chock.core's answers.
func FromOutput(ctx context.Context, out *compile.Output) (*Engine, error) {
	if len(out.Meta.Orgs) > 0 {
		return nil, fmt.Errorf("%w: a compilation that links its orgs decides only beside their bundles (NewBundles)", ErrUnavailable)
	}
	p := &prepared{revision: out.Revision, meta: *out.Meta, revisions: map[string]string{"chock": out.Revision}}
	if out.Only != nil {
		p.only = map[string]bool{}
		for _, a := range out.Only {
			p.only[a] = true
		}
	}
	if err := p.prepareQueries(ctx, out.Compiler(), inmem.New()); err != nil {
		return nil, err
	}
	if err := p.probe(ctx, nil); err != nil {
		return nil, err
	}
	e := &Engine{}
	e.cur.Store(p)
	return e, nil
}

// NewCompiled prepares an engine on a policy compiled and stored
// elsewhere: OPA's plugin manager's compiler and store, after it activated
// the bundles given by name. logs, when not nil, is told every decision.
func NewCompiled(ctx context.Context, c *ast.Compiler, store storage.Store, bundles map[string]BundleInfo, logs DecisionLogger) (*Engine, error) {
	p, err := prepareElsewhere(ctx, c, store, bundles)
	if err != nil {
		return nil, err
	}
	e := &Engine{logs: logs}
	e.cur.Store(p)
	return e, nil
}

// SwapCompiled replaces the policy with one compiled and stored
// elsewhere, as NewCompiled takes it. Decisions in flight finish on the
// old one. When the new one cannot be prepared, the error says why, and
// every decision after it fails with ErrUnavailable until a policy that
// can be is swapped in: the old policy no longer matches the store.
func (e *Engine) SwapCompiled(ctx context.Context, c *ast.Compiler, store storage.Store, bundles map[string]BundleInfo) error {
	if e.pinned || e.remote != nil {
		return errors.New("this engine's policy cannot be replaced")
	}
	p, err := prepareElsewhere(ctx, c, store, bundles)
	if err != nil {
		old := e.cur.Load()
		revisions := revisionsOf(bundles)
		failed := &prepared{failure: err, revision: revisionOf(revisions), revisions: revisions}
		if old != nil {
			failed.meta = old.meta
		}
		e.cur.Store(failed)
		return err
	}
	e.cur.Store(p)
	return nil
}

// Pinned returns a view of the engine that decides with its current policy
// only: a swap after it does not reach the view. A call pins the policy it
// started on, so it finishes on it. A remote engine's view asks the same
// remote OPA.
func (e *Engine) Pinned() *Engine {
	v := &Engine{remote: e.remote, logs: e.logs, pinned: true}
	v.cur.Store(e.cur.Load())
	return v
}

// Adopt makes the policy another engine decides with this one's: how a
// policy loaded afresh (mcp serve's reload) is swapped in without being
// prepared twice. Decisions in flight finish on the old one.
func (e *Engine) Adopt(other *Engine) error {
	if e.pinned || e.remote != nil || other.remote != nil {
		return errors.New("this engine's policy cannot be replaced")
	}
	e.cur.Store(other.cur.Load())
	return nil
}

// Err is why the engine's policy cannot decide now (an activated bundle
// that is not chock's), or nil.
func (e *Engine) Err() error {
	if e.remote != nil {
		return nil
	}
	return e.cur.Load().failure
}

// Swap replaces the policy with the bundles given, loaded side by side as
// NewBundles loads them. Decisions in flight finish on the old one; the
// new one is prepared before it takes over, so a bad bundle changes nothing.
func (e *Engine) Swap(ctx context.Context, bs ...*bundle.Bundle) error {
	if e.pinned || e.remote != nil {
		return errors.New("this engine's policy cannot be replaced")
	}
	p, err := prepare(ctx, bs)
	if err != nil {
		return err
	}
	e.cur.Store(p)
	return nil
}

// Revision is the loaded bundle's revision (its content digest); for
// several bundles, each one's by name. A remote engine's is the one its
// last answer came from.
func (e *Engine) Revision() string {
	if e.remote != nil {
		return e.remote.revision()
	}
	return e.cur.Load().revision
}

// Meta returns what the loaded bundle records of its sources.
func (e *Engine) Meta() Meta {
	if e.remote != nil {
		return e.remote.meta()
	}
	return e.cur.Load().meta
}

// Decide asks the policy about one action at one phase. A malformed action
// is not an error: it is denied, with Decision.Error saying why.
// The result is the caller's to keep or change.
func (e *Engine) Decide(ctx context.Context, action string, phase config.Phase) (*Decision, error) {
	return e.decideLogged(ctx, action, phase, true)
}

// DecideUnlogged is Decide without telling the decision logger: for the
// decisions a session works out before any call asks (its exec rights,
// one for each program on its PATH), which would fill the decision log
// with decisions no call made. A remote OPA logs what it is asked itself.
func (e *Engine) DecideUnlogged(ctx context.Context, action string, phase config.Phase) (*Decision, error) {
	return e.decideLogged(ctx, action, phase, false)
}

// DecideManyUnlogged is DecideUnlogged for each of actions, in their
// order: a remote OPA is asked about many in one request
// (data.chock.decisions), where one request each would cost a round trip
// each. Any failure fails the whole.
func (e *Engine) DecideManyUnlogged(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error) {
	if e.remote != nil {
		return e.remote.decideMany(ctx, actions, phase)
	}
	return e.decideMany(ctx, e.cur.Load(), actions, phase)
}

// DecideArgs is Decide for a call that runs a program with these
// arguments (its argv after argv[0]): the rules with .args match them
// (action.Args). Arguments not known (nil) match no rule with .args; an
// argument of shell text that cannot be read is action.Unknown.
func (e *Engine) DecideArgs(ctx context.Context, action string, args []string, phase config.Phase) (*Decision, error) {
	return e.decideArgs(ctx, action, args, phase, true)
}

func (e *Engine) decideLogged(ctx context.Context, action string, phase config.Phase, logged bool) (*Decision, error) {
	return e.decideArgs(ctx, action, nil, phase, logged)
}

func (e *Engine) decideArgs(ctx context.Context, action string, args []string, phase config.Phase, logged bool) (*Decision, error) {
	if e.remote != nil {
		if args != nil && !matchesAny(e.ArgsPatterns(), action) {
			args = nil // no rule reads them: a call's arguments stay here
		}
		d, err := e.remote.decide(ctx, action, args, phase)
		if d != nil {
			d.Args = args
		}
		return d, err
	}
	p := e.cur.Load()
	if p.failure != nil {
		return nil, fmt.Errorf("deciding %q: %w: %w", action, ErrUnavailable, p.failure)
	}
	if p.only != nil && !p.only[action] {
		return nil, fmt.Errorf("deciding %q: %w: the policy was compiled for other actions only", action, ErrUnavailable)
	}
	if args != nil && !matchesAny(p.argsPatterns(), action) {
		args = nil // no rule reads them: the action's decision, cached
	}
	key := decisionKey{action: action, phase: phase}
	if args != nil {
		key.args = argsKey(args)
	}
	d, ok := p.decisions.get(key)
	if ok {
		d = d.clone()
	} else {
		var err error
		if d, err = p.decide(ctx, action, args, phase); err != nil {
			return nil, fmt.Errorf("deciding %q: %w", action, err)
		}
		p.decisions.put(key, d.clone())
	}
	d.Args = args
	d.Revision = p.revision
	if e.logs != nil && logged {
		if err := e.logDecision(ctx, p, d); err != nil {
			return nil, fmt.Errorf("deciding %q: %w: the decision log refused it: %w", action, ErrUnavailable, err)
		}
	}
	return d, nil
}

// logDecision gives the decision an ID and tells the decision logger.
func (e *Engine) logDecision(ctx context.Context, p *prepared, d *Decision) error {
	id, err := NewDecisionID()
	if err != nil {
		return err
	}
	d.ID = id
	return e.logs.LogDecision(ctx, DecisionEvent{
		ID:        id,
		Path:      "chock/decision",
		Input:     map[string]any{"action": d.Action, "phase": d.Phase.String()},
		Decision:  d.clone(),
		Revisions: p.revisions,
		Time:      time.Now().UTC(),
	})
}

// NewDecisionID is a random version 4 UUID, the form OPA gives its
// decision IDs.
func NewDecisionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// Target is what secrets are offered to: a call (Action) or a server.
type Target struct {
	Action string
	Server string
}

// Secret is one secret offered to a call or server, before any secret.use
// decision.
type Secret struct {
	Name string      `json:"name"`
	Bind config.Bind `json:"bind"`
	// As is the variable (env, file) or header (header) it arrives under.
	As   string    `json:"as"`
	To   string    `json:"to"`
	Span diag.Span `json:"span"`
}

// Secrets returns the secrets offered to a call of a program or to a
// server, in declaration order.
func (e *Engine) Secrets(ctx context.Context, t Target) ([]Secret, error) {
	if (t.Action == "") == (t.Server == "") {
		return nil, errors.New("secrets: name an action or a server")
	}
	if e.remote != nil {
		return e.remote.secrets(ctx, t)
	}
	p := e.cur.Load()
	if p.failure != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, p.failure)
	}
	if s, ok := p.offers.get(t); ok {
		return append([]Secret(nil), s...), nil
	}
	in := ast.NewObject([2]*ast.Term{ast.InternedTerm("server"), ast.StringTerm(t.Server)})
	if t.Action != "" {
		in = ast.NewObject([2]*ast.Term{ast.InternedTerm("action"), ast.StringTerm(t.Action)})
	}
	rs, err := p.secrets.Eval(ctx, rego.EvalParsedInput(in))
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, errors.New("the policy gave no secrets answer")
	}
	out, err := secretsAnswer(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, err
	}
	p.offers.put(t, append([]Secret(nil), out...))
	return out, nil
}
