package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/fleet"
	"github.com/chockhq/chock/eval/load"
	"github.com/spf13/pflag"
)

// opaFlags choose a policy that OPA's own machinery serves: OPA's
// configuration file (--opa-config: bundle service, signing keys,
// decision logs), or a running opa run --server (--opa-url).
type opaFlags struct {
	config  string
	url     string
	ca      string
	timeout time.Duration
	// fleet is the running plugin manager, once loaded: close stops it,
	// flushing its decision logs.
	fleet *fleet.Fleet
	// onSwap, when set before load, is told each policy the bundle
	// service swaps in (mcp serve tells its clients).
	onSwap func(revision string)
}

// opaTokenEnv is the variable --opa-url's bearer token is read from.
const opaTokenEnv = "CHOCK_OPA_TOKEN"

// defaultOPATimeout is --opa-timeout's default.
const defaultOPATimeout = 10 * time.Second

// add adds --opa-config, --opa-url, --opa-ca and --opa-timeout.
func (o *opaFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&o.config, "opa-config", "", "decide with the policy OPA's configuration `FILE` names (services, bundles, keys, decision_logs, as opa run -c takes it), through OPA's plugins")
	fs.StringVar(&o.url, "opa-url", "", "ask the running opa run --server at `URL` for every decision (https://, or http:// to a loopback address; bearer token from $"+opaTokenEnv+")")
	fs.StringVar(&o.ca, "opa-ca", "", "trust the CA certificates in PEM `FILE` for --opa-url's TLS")
	fs.DurationVar(&o.timeout, "opa-timeout", defaultOPATimeout, "the `DURATION` a decision may wait for OPA: --opa-url's answer, --opa-config's first bundle and its last decision-log upload")
}

// given says whether OPA serves the policy.
func (o *opaFlags) given() bool { return o.config != "" || o.url != "" }

// check refuses flags that do not go together.
func (o *opaFlags) check(p *policyFlags) error {
	switch {
	case o.config != "" && o.url != "":
		return errors.New("--opa-config and --opa-url each name where the policy comes from; give one")
	case o.ca != "" && (o.url == "" || !strings.HasPrefix(strings.ToLower(o.url), "https://")):
		return errors.New("--opa-ca is for --opa-url's TLS: give an https:// URL")
	case o.given() && o.timeout <= 0:
		return errors.New("--opa-timeout must be positive")
	case !o.given():
		return nil
	case len(p.orgs) > 0 || p.bundleGiven() || p.flags != nil && p.flags.Changed("config"):
		return errors.New("with --opa-config or --opa-url, OPA serves the policy; give no --config, --org or --bundle")
	}
	return nil
}

// load starts OPA's plugins from --opa-config, or connects to --opa-url.
func (o *opaFlags) load(ctx context.Context, std stdio) (*load.Policy, error) {
	if o.url != "" {
		return o.loadRemote(ctx)
	}
	raw, err := readInput(o.config, std)
	if err != nil {
		return nil, inputError(exitUsage, fmt.Errorf("--opa-config: %w", err))
	}
	f, err := fleet.Start(ctx, fleet.Options{Config: raw, Name: displayName(o.config), Wait: o.timeout, Log: std.err, OnSwap: o.onSwap})
	if err != nil {
		return nil, inputError(exitFailed, err)
	}
	o.fleet = f
	e := f.Engine()
	return &load.Policy{Engine: e, Sources: bundleSources(e.Meta())}, nil
}

// close stops OPA's plugins, if they run, flushing pending decision logs
// within --opa-timeout.
func (o *opaFlags) close() {
	if o.fleet != nil {
		o.fleet.Stop(context.Background())
		o.fleet = nil
	}
}

// loadRemote connects to --opa-url: the policy's meta is read at once, so
// a server that does not answer, or holds no chock policy, fails here.
func (o *opaFlags) loadRemote(ctx context.Context) (*load.Policy, error) {
	if _, err := eval.CheckRemoteURL(o.url); err != nil {
		return nil, inputError(exitUsage, fmt.Errorf("--opa-url: %w", err))
	}
	var ca []byte
	if o.ca != "" {
		var err error
		if ca, err = os.ReadFile(o.ca); err != nil {
			return nil, inputError(exitUsage, fmt.Errorf("--opa-ca: %w", err))
		}
	}
	e, err := eval.NewRemote(ctx, eval.RemoteOptions{URL: o.url, Token: os.Getenv(opaTokenEnv), CA: ca, Budget: o.timeout})
	if err != nil {
		code := exitFailed
		if errors.Is(err, eval.ErrRemoteURL) || errors.Is(err, eval.ErrRemoteOptions) {
			code = exitUsage
		}
		return nil, inputError(code, err)
	}
	return &load.Policy{Engine: e, Sources: bundleSources(e.Meta())}, nil
}
