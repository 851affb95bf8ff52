// Package fleet runs a policy the way an OPA fleet member does: from OPA's
// own configuration file (services, bundles, decision_logs, status, keys,
// discovery: what opa run -c takes), through OPA's plugin manager. The
// bundle plugin downloads, verifies and activates the policy; every
// activation is prepared and swapped into the engine; every decision the
// engine makes goes to the decision-log plugin in OPA's own event format.
//
// OPA's SDK is not used for decisions: its Decision keeps the first
// decision's rule tracker in a cached query, so later events lose their
// labels and concurrent decisions race on the shared tracker. Here the
// engine prepares its own queries on each activated compiler and store,
// passes nothing shared to an evaluation, and builds each decision-log
// event itself, with chock's decision object as its result.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/plugins"
	"github.com/open-policy-agent/opa/v1/plugins/discovery"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/open-policy-agent/opa/v1/server"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"
)

// Options say how to run.
type Options struct {
	// Config is OPA's configuration file, YAML or JSON.
	Config []byte
	// Name is the file it came from, for errors.
	Name string
	// Wait bounds the wait for the first policy, and the flush of pending
	// decision logs at Stop.
	Wait time.Duration
	// Log receives OPA's own error messages (a download that failed, a
	// signature that did not verify) and chock's word on each swap.
	Log io.Writer
	// OnSwap, when set, is called after each activated policy is swapped
	// in, with its revision.
	OnSwap func(revision string)
}

// Fleet is a running plugin manager and the engine it feeds.
type Fleet struct {
	o      Options
	m      *plugins.Manager
	engine *eval.Engine
	// kick coalesces activations: the rebuild loop prepares the newest.
	kick chan struct{}
	done chan struct{}
	// mu guards last and engine's first arrival.
	mu     sync.Mutex
	last   string // the last revision swapped in, or the last failure
	first  chan struct{}
	status map[string]*plugins.Status
	stop   context.CancelFunc
	// logger is OPA's logger, which keeps the last error it printed.
	logger *lineLogger
}

// configKeys are the top-level keys of OPA's configuration (its
// config.Config, OPA 1.22).
var configKeys = []string{"services", "labels", "discovery", "bundle", "bundles", "decision_logs", "status", "plugins", "keys",
	"default_decision", "default_authorization_decision", "caching", "nd_builtin_cache", "persistence_directory",
	"distributed_tracing", "metrics_export", "server", "storage"}

// named says whether a configuration value names something: a non-empty
// object.
func named(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) > 0
}

// ErrNoPolicy means the bundle service gave no policy within the wait.
var ErrNoPolicy = errors.New("OPA's bundle plugin activated no chock policy")

// Start reads the configuration, starts OPA's plugins and waits, within
// o.Wait, for the first policy to be activated and prepared. The context
// bounds that wait only; the plugins run until Stop.
func Start(ctx context.Context, o Options) (*Fleet, error) {
	if o.Wait <= 0 {
		o.Wait = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	logger := newLineLogger(o.Log)
	cfg := newConfig(o.Name, o.Config)
	store := inmem.NewWithOpts(inmem.OptRoundTripOnWrite(false))
	// Each instance has an id of its own, as opa run gives one: the
	// decision log's labels.id tells the members of a fleet apart.
	id, err := eval.NewDecisionID()
	if err != nil {
		return nil, err
	}
	m, err := plugins.New(o.Config, id, store,
		plugins.Logger(logger),
		plugins.ConsoleLogger(logger),
		plugins.WithParserOptions(ast.ParserOptions{RegoVersion: ast.RegoV1}),
		plugins.GracefulShutdownPeriod(int(max(o.Wait/time.Second, 1))),
	)
	if err != nil {
		return nil, cfg.errorAt(err)
	}
	if err := m.Init(ctx); err != nil {
		return nil, cfg.errorAt(err)
	}
	var boot map[string]any
	if err := util.Unmarshal(o.Config, &boot); err != nil {
		return nil, cfg.errorAt(err)
	}
	for _, k := range slices.Sorted(maps.Keys(boot)) {
		if !slices.Contains(configKeys, k) {
			fmt.Fprintf(o.Log, "chock: %s: OPA's configuration has no key %q (a typo?); it is ignored\n", cfg.at(k), k)
		}
	}
	if !named(boot["bundles"]) && !named(boot["bundle"]) && !named(boot["discovery"]) {
		return nil, fmt.Errorf("%s: %w: the configuration names no bundles (and no discovery) to download", o.Name, ErrNoPolicy)
	}
	d, err := discovery.New(m, discovery.BootConfig(boot))
	if err != nil {
		return nil, cfg.errorAt(err)
	}
	m.Register(discovery.Name, d)
	runCtx, cancel := context.WithCancel(context.Background())
	f := &Fleet{o: o, m: m, logger: logger, kick: make(chan struct{}, 1), done: make(chan struct{}), first: make(chan struct{}), stop: cancel}
	m.RegisterCompilerTrigger(func(storage.Transaction) {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	})
	m.RegisterPluginStatusListener("chock", func(st map[string]*plugins.Status) {
		f.mu.Lock()
		f.status = st
		f.mu.Unlock()
	})
	go f.loop(runCtx)
	if err := m.Start(ctx); err != nil {
		f.Stop(context.Background())
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	wait, cancelWait := context.WithTimeout(ctx, o.Wait)
	defer cancelWait()
	select {
	case <-f.first:
		return f, nil
	case <-wait.Done():
	}
	why := f.waitingFor()
	f.Stop(context.Background())
	return nil, fmt.Errorf("%s: %w within %s: %s", o.Name, ErrNoPolicy, o.Wait, why)
}

// waitingFor says what the plugins report while no policy is prepared.
func (f *Fleet) waitingFor() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	if why := f.logger.lastError(); why != "" {
		parts = append(parts, why)
	}
	if f.last != "" {
		parts = append(parts, f.last)
	}
	for _, name := range slices.Sorted(maps.Keys(f.status)) {
		if s := f.status[name]; s.State != plugins.StateOK && s.Message != "" {
			parts = append(parts, name+" "+strings.ToLower(string(s.State))+": "+s.Message)
		}
	}
	if len(parts) == 0 {
		return "no bundle was activated"
	}
	return strings.Join(parts, "; ")
}

// loop prepares the newest activated policy each time one is activated.
func (f *Fleet) loop(ctx context.Context) {
	defer close(f.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		}
		f.rebuild(ctx)
	}
}

// rebuild prepares the manager's current compiler and store and swaps it
// in (the first one makes the engine). A policy that does not prepare
// makes every decision fail with eval.ErrUnavailable until one does.
func (f *Fleet) rebuild(ctx context.Context) {
	c := f.m.GetCompiler()
	revs, err := bundles(ctx, f.m.Store)
	if err == nil && c == nil {
		err = errors.New("no policy is compiled yet")
	}
	f.mu.Lock()
	e := f.engine
	f.mu.Unlock()
	var logger eval.DecisionLogger
	if logs.Lookup(f.m) != nil {
		logger = f
	}
	if err == nil && e != nil && e.Err() == nil && e.Revision() == eval.RevisionOf(revs) {
		return // the same bundles activated again (a server without ETags)
	}
	if err == nil {
		if e == nil {
			e, err = eval.NewCompiled(ctx, c, f.m.Store, revs, logger)
		} else {
			err = e.SwapCompiled(ctx, c, f.m.Store, revs)
		}
	}
	rev := ""
	if err == nil {
		rev = e.Revision()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.last = err.Error()
		if f.engine != nil && len(f.kick) == 0 {
			// Before the first policy, the wait's error says why; bundles
			// activated one by one are not each a failure. With another
			// activation pending (this one read the compiler of one and
			// the store of the next), the next rebuild settles it.
			fmt.Fprintf(f.o.Log, "chock: the activated bundles do not make a policy chock can decide with (every decision is refused until they do): %v\n", err)
		}
		return
	}
	first := f.engine == nil
	f.engine, f.last = e, ""
	if first {
		close(f.first)
		return
	}
	fmt.Fprintf(f.o.Log, "chock: policy %s swapped in from the bundle service\n", eval.ShortRevision(rev))
	if f.o.OnSwap != nil {
		go f.o.OnSwap(rev)
	}
}

// bundles are the activated bundles' revisions and roots, by bundle name.
func bundles(ctx context.Context, store storage.Store) (map[string]eval.BundleInfo, error) {
	out := map[string]eval.BundleInfo{}
	err := storage.Txn(ctx, store, storage.TransactionParams{}, func(txn storage.Transaction) error {
		names, err := bundle.ReadBundleNamesFromStore(ctx, store, txn)
		if err != nil && !storage.IsNotFound(err) {
			return err
		}
		for _, n := range names {
			r, err := bundle.ReadBundleRevisionFromStore(ctx, store, txn, n)
			if err != nil && !storage.IsNotFound(err) {
				return err
			}
			roots, err := bundle.ReadBundleRootsFromStore(ctx, store, txn, n)
			if err != nil && !storage.IsNotFound(err) {
				return err
			}
			out[n] = eval.BundleInfo{Revision: r, Roots: roots}
		}
		return nil
	})
	return out, err
}

// Engine is the engine the activated policy decides with. Swaps reach it
// in place: a session holding it sees each new policy at its next call.
func (f *Fleet) Engine() *eval.Engine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.engine
}

// LogDecision hands one decision to OPA's decision-log plugin, in OPA's
// event format: chock's decision object is the result, the input is the
// action and phase asked, and the bundles are the ones that decided.
func (f *Fleet) LogDecision(ctx context.Context, ev eval.DecisionEvent) error {
	p := logs.Lookup(f.m)
	if p == nil {
		return nil
	}
	result, err := plainJSON(ev.Decision)
	if err != nil {
		return err
	}
	input := any(ev.Input)
	bundles := make(map[string]server.BundleInfo, len(ev.Revisions))
	for name, r := range ev.Revisions {
		bundles[name] = server.BundleInfo{Revision: r}
	}
	return p.Log(ctx, &server.Info{
		DecisionID: ev.ID,
		Path:       ev.Path,
		Timestamp:  ev.Time,
		Input:      &input,
		Results:    &result,
		Bundles:    bundles,
		Metrics:    metrics.New(),
	})
}

// plainJSON is v as plain JSON data (maps, slices, json.Number), the form
// OPA's decision-log masking works on.
func plainJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// Stop stops the plugins, first flushing pending decision logs to their
// service within Options.Wait.
func (f *Fleet) Stop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Wait)
	defer cancel()
	f.m.Stop(ctx)
	f.stop()
	<-f.done
}
