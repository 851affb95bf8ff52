package eval

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/boundread"
	"github.com/chockhq/chock/internal/netaddr"
	"github.com/chockhq/chock/internal/safetext"
)

// RemoteOptions says which running OPA (opa run --server) a remote
// engine asks, and how.
type RemoteOptions struct {
	// URL is the server's address, https:// anywhere or http:// to a
	// loopback address only (CheckRemoteURL).
	URL string
	// Token, when set, is sent as a bearer token with every request
	// ($CHOCK_OPA_TOKEN). It never appears in an error.
	Token string
	// CA is PEM certificates added to the system's roots to verify the
	// server's certificate (--opa-ca).
	CA []byte
	// Budget bounds each request: a decision, a secrets query, a read of
	// the policy's meta. Zero is DefaultBudget.
	Budget time.Duration
}

// DefaultBudget is how long a remote engine waits for one answer when
// RemoteOptions.Budget is zero.
const DefaultBudget = 10 * time.Second

// The most a remote engine reads of one answer: a decision or a secrets
// answer is a few kilobytes, the policy's meta grows with its rules.
const (
	maxAnswer    = 8 << 20
	maxMeta      = 256 << 20
	maxErrorBody = 64 << 10
)

// ErrRemoteOptions is wrapped by the error for options a remote engine
// cannot use (a token a header cannot carry, a negative budget): a usage
// error, as ErrRemoteURL is.
var ErrRemoteOptions = errors.New("bad options for a remote OPA")

// ErrRemoteURL is wrapped by the error for a URL a remote engine will not
// use (CheckRemoteURL): a usage error, not an unavailable policy.
var ErrRemoteURL = errors.New("not a URL chock asks OPA at")

// CheckRemoteURL is the one rule for the URL of a remote OPA: https://
// anywhere; http:// only to this machine's loopback (127.0.0.0/8, ::1,
// localhost), since a bearer token would travel in clear; no user or
// password in it, no query or fragment. It returns the URL with no
// trailing slash.
func CheckRemoteURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error holds the whole URL, a password in it too: only the
		// reason is shown.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: the URL does not parse: %v", ErrRemoteURL, err)
	}
	// The URL may hold a password: it is shown without its user part.
	shown := *u
	shown.User = nil
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: %s: the scheme must be https (or http to this machine's loopback)", ErrRemoteURL, shown.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("%w: %s: a user or password in the URL is refused; pass the token in $CHOCK_OPA_TOKEN", ErrRemoteURL, shown.Redacted())
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: %s: no host", ErrRemoteURL, u)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("%w: %s: a query or fragment is refused", ErrRemoteURL, u)
	case u.Scheme == "http" && !netaddr.Loopback(u.Hostname()):
		return nil, fmt.Errorf("%w: %s: http:// is only for this machine's loopback (127.0.0.1, ::1, localhost), where a token cannot be read on the way; use https://", ErrRemoteURL, u)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// remoteOPA is a policy held by a running OPA, asked over its REST API.
type remoteOPA struct {
	base   *url.URL
	shown  string // base as errors name it
	token  string
	budget time.Duration
	client *http.Client

	mu sync.Mutex
	// metaRev is the revision of the meta read or used last; rev the
	// revision of the last answer.
	metaRev, rev string
	// metas are the metas of the last keptMetas revisions read, in the
	// order first read in metaOrder (the first read is the first dropped);
	// metas[metaRev] is always there.
	metas     map[string]Meta
	metaOrder []string
	// noBatch says when data.chock.decisions is not asked.
	noBatch noBatch
}

// NewRemote returns an engine that decides by asking a running OPA (opa
// run --server) that has chock's bundle loaded. It reads the policy's
// meta first: a server that does not answer, refuses the token, or holds
// no chock bundle is an error wrapping ErrUnavailable; a URL that breaks
// CheckRemoteURL's rule, one wrapping ErrRemoteURL. No request is made to
// a URL the rule refuses.
func NewRemote(ctx context.Context, o RemoteOptions) (*Engine, error) {
	u, err := CheckRemoteURL(o.URL)
	if err != nil {
		return nil, err
	}
	for _, c := range o.Token {
		if c <= ' ' || c > '~' {
			return nil, fmt.Errorf("%w: the OPA token has a character a bearer token cannot hold (white space, a control character or one outside ASCII)", ErrRemoteOptions)
		}
	}
	if o.Budget < 0 {
		return nil, fmt.Errorf("%w: a negative budget (%s) for each OPA answer", ErrRemoteOptions, o.Budget)
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	client, err := remoteClient(u, o.CA)
	if err != nil {
		return nil, err
	}
	r := &remoteOPA{base: u, shown: u.String(), token: o.Token, budget: o.Budget, client: client, metas: map[string]Meta{}}
	if _, err := r.readMeta(ctx, ""); err != nil {
		client.CloseIdleConnections()
		return nil, err
	}
	return &Engine{remote: r}, nil
}

// remoteClient is the one HTTP client of a remote engine: keep-alive
// connections enough for a few sessions at once, redirects not followed
// (the token would go with them), TLS verified against the system's roots
// and ca; for http://, connections to a loopback address only, whatever
// the name resolved to.
func remoteClient(u *url.URL, ca []byte) (*http.Client, error) {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if u.Scheme == "http" {
		dialer.Control = loopbackOnly
	} else {
		tr.Proxy = http.ProxyFromEnvironment
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if len(ca) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(ca) {
				return nil, errors.New("the OPA CA holds no PEM certificate")
			}
			tc.RootCAs = pool
		}
		tr.TLSClientConfig = tc
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// loopbackOnly is a dialer's Control for http://: it refuses to connect
// to an address that is not loopback, whatever name resolved to it.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("%s is not a loopback address, and http:// goes to loopback only", address)
	}
	return nil
}

// unavailableError is a remote engine's failure: its text, from which the
// token is removed, and what caused it, for errors.Is.
type unavailableError struct {
	msg   string
	cause error
}

func (e *unavailableError) Error() string { return e.msg }

func (e *unavailableError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.cause}
}

// fail is the error for what failed: "WHAT: no policy could decide:
// DETAIL", the token nowhere in it.
func (r *remoteOPA) fail(what string, detail string, cause error) error {
	// A cause that says no policy could decide already is not said so
	// twice.
	detail = strings.ReplaceAll(detail, ErrUnavailable.Error()+": ", "")
	msg := fmt.Sprintf("%s: %v: %s", what, ErrUnavailable, detail)
	if r.token != "" {
		msg = strings.ReplaceAll(msg, r.token, "[token]")
	}
	return &unavailableError{msg: msg, cause: cause}
}

// opaResponse is what OPA's data API answers: the result (absent when the
// document is undefined), the decision's ID when decision logs are kept,
// and the bundles it came from.
type opaResponse struct {
	Result     *json.RawMessage `json:"result"`
	DecisionID string           `json:"decision_id"`
	Provenance struct {
		Bundles map[string]struct {
			Revision string `json:"revision"`
		} `json:"bundles"`
		Revision string `json:"revision"`
	} `json:"provenance"`
}

// revision is the answer's policy revision, as revisionOf gives one.
func (o *opaResponse) revision() string {
	if len(o.Provenance.Bundles) == 0 {
		return o.Provenance.Revision
	}
	revs := make(map[string]string, len(o.Provenance.Bundles))
	for name, b := range o.Provenance.Bundles {
		revs[name] = b.Revision
	}
	return revisionOf(revs)
}

// result decodes the answer's result, numbers as json.Number; found is
// false when OPA left it out (the document is undefined).
func (o *opaResponse) result() (v any, found bool, err error) {
	if o.Result == nil {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(*o.Result))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, true, err
	}
	return v, true, nil
}

// ask makes one request to OPA's data API at path (data.chock.decision
// is "chock/decision"), within the budget: a GET when body is nil, else a
// POST of {"input": body}. The error is a detail for fail, and its cause.
func (r *remoteOPA) ask(ctx context.Context, method, path string, body any, limit int64) (*opaResponse, string, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.budget)
	defer cancel()
	u := *r.base
	u.Path += "/v1/data/" + path
	u.RawQuery = "provenance=true"
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(map[string]any{"input": body})
		if err != nil {
			return nil, "the input does not encode: " + err.Error(), err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err.Error(), err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	// A query of the data API changes nothing, so the transport may send
	// it again on a fresh connection when a kept-alive one turns out dead
	// (an OPA restarted or killed since the last decision): the empty key
	// marks it idempotent and is not sent.
	req.Header["X-Idempotency-Key"] = []string{}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, r.unreached(parent, ctx, err), err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return nil, r.refused(resp), fmt.Errorf("%w: status %d", errRefusedPath, resp.StatusCode)
	default:
		return nil, r.refused(resp), fmt.Errorf("status %d", resp.StatusCode)
	}
	var out opaResponse
	dec := json.NewDecoder(boundread.New(resp.Body, limit, func() error { return errTooLarge }))
	dec.UseNumber()
	err = dec.Decode(&out)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("more than one JSON value")
		}
	}
	switch {
	case err == nil:
		return &out, "", nil
	case ctx.Err() != nil:
		return nil, r.unreached(parent, ctx, err), err
	case errors.Is(err, errTooLarge):
		return nil, fmt.Sprintf("opa at %s answered more than %d bytes", r.shown, limit), err
	}
	return nil, fmt.Sprintf("opa at %s answered what is not OPA's JSON: %s", r.shown, safetext.Line(err.Error())), err
}

// errRefusedPath is an answer that refuses the path rather than failing
// to answer: 401 or 403 (OPA's authentication or authorization policy,
// which opa run --server --authorization=basic answers with a 401), or
// 404, 405 or 501 (a proxy in front of OPA that lets through only the
// paths it knows).
var errRefusedPath = errors.New("the path is refused")

// errTooLarge is the error of a read past an answer's limit.
var errTooLarge = errors.New("the answer is too large")

// unreached words a request that got no answer: the budget spent, the
// caller gone, the connection refused or broken.
func (r *remoteOPA) unreached(parent, ctx context.Context, err error) string {
	switch {
	case parent.Err() != nil:
		return fmt.Sprintf("asking opa at %s: %v", r.shown, parent.Err())
	case ctx.Err() != nil:
		return fmt.Sprintf("opa at %s did not answer within %s", r.shown, r.budget)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("opa at %s refused the connection (is opa run --server running there?)", r.shown)
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return fmt.Sprintf("opa at %s could not be reached: %s (a private CA? --opa-ca FILE trusts it)", r.shown, safetext.Line(err.Error()))
	}
	return fmt.Sprintf("opa at %s could not be reached: %s", r.shown, safetext.Line(err.Error()))
}

// refused words an answer other than 200: its status, and OPA's own
// message when it sent one ({"code": ..., "message": ...}).
func (r *remoteOPA) refused(resp *http.Response) string {
	msg := fmt.Sprintf("opa at %s answered %s", r.shown, resp.Status)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return msg + " (a redirect, which chock does not follow: give the URL it names)"
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		text := e.Message
		if e.Code != "" {
			text = e.Code + ": " + text
		}
		if len(text) > 300 {
			text = strings.ToValidUTF8(text[:300], "") + "…"
		}
		msg += ": " + safetext.Line(text)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		if r.token == "" {
			msg += " (no token was sent: set $CHOCK_OPA_TOKEN)"
		} else {
			msg += " (the token was refused)"
		}
	}
	return msg
}

// remoteMeta is the meta a remote engine reads, and its revision.
type remoteMeta struct {
	meta Meta
	rev  string
}

// metaTries is how many times the meta is read before a remote engine
// gives up on one consistent with itself and with the answer it is for.
const metaTries = 4

// errMixedRevisions means the parts of one meta read, or the meta and the
// answer it is for, came from different revisions: several OPAs behind
// one URL, mid-rollout.
var errMixedRevisions = errors.New("answers from different revisions")

// readMeta reads data.chock.meta from the server (readMetaOnce), again
// while its parts, or the meta and want (the revision of the answer it is
// for; "" for any), come from different revisions: behind a load balancer
// each request can reach another replica.
func (r *remoteOPA) readMeta(ctx context.Context, want string) (*remoteMeta, error) {
	var got string
	for range metaTries {
		m, err := r.readMetaOnce(ctx)
		switch {
		case errors.Is(err, errMixedRevisions):
			continue
		case err != nil:
			return nil, err
		case want == "" || m.rev == want:
			return m, nil
		}
		got = m.rev
	}
	detail := fmt.Sprintf("opa at %s answered from revision %s, and its meta came from %s, %d times (several OPAs at different revisions behind one URL?)", r.shown, ShortRevision(want), ShortRevision(got), metaTries)
	if got == "" {
		detail = fmt.Sprintf("opa at %s answered the meta's parts from different revisions, %d times (several OPAs at different revisions behind one URL?)", r.shown, metaTries)
	}
	return nil, r.fail("reading the policy's meta", detail, errMixedRevisions)
}

// readMetaOnce reads data.chock.meta from the server (assembleMeta), and
// keeps it with the revision it was read at.
func (r *remoteOPA) readMetaOnce(ctx context.Context) (*remoteMeta, error) {
	var rev string
	var detail string
	var cause error
	first := true
	m, err := assembleMeta(func(path ...string) (any, bool, error) {
		resp, d, err := r.ask(ctx, http.MethodGet, strings.Join(path, "/"), nil, maxMeta)
		if err != nil {
			detail, cause = d, err
			return nil, false, err
		}
		if !first && resp.revision() != rev {
			return nil, false, errMixedRevisions
		}
		rev, first = resp.revision(), false
		v, found, err := resp.result()
		if err != nil {
			detail, cause = r.notJSON(err), err
		}
		return v, found, err
	})
	switch {
	case errors.Is(err, errMixedRevisions):
		return nil, err
	case err != nil && detail != "":
		return nil, r.fail("reading the policy's meta", detail, cause)
	case errors.Is(err, compile.ErrNotChockBundle):
		return nil, r.fail("reading the policy's meta", fmt.Sprintf("opa at %s: %s (is chock's bundle loaded there?)", r.shown, safetext.Line(err.Error())), err)
	case err != nil:
		return nil, r.fail("reading the policy's meta", fmt.Sprintf("opa at %s: %s", r.shown, safetext.Line(err.Error())), err)
	}
	rm := &remoteMeta{meta: *m, rev: rev}
	r.mu.Lock()
	if _, seen := r.metas[rev]; !seen {
		if len(r.metaOrder) == keptMetas {
			delete(r.metas, r.metaOrder[0])
			r.metaOrder = r.metaOrder[1:]
		}
		r.metaOrder = append(r.metaOrder, rev)
	}
	r.metas[rev], r.metaRev, r.rev = rm.meta, rev, rev
	r.mu.Unlock()
	return rm, nil
}

// keptMetas is how many revisions' metas a remote engine keeps: behind a
// load balancer whose replicas are at different revisions, answers flip
// between them, and each flip would read the meta again.
const keptMetas = 4

// kept is the meta of revision rev if it was read before, made the
// current one.
func (r *remoteOPA) kept(rev string) (*remoteMeta, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.metas[rev]
	if !ok {
		return nil, false
	}
	r.metaRev = rev
	return &remoteMeta{meta: m, rev: rev}, true
}

// current is the meta read last, with the revision it was read at.
func (r *remoteOPA) current() *remoteMeta {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &remoteMeta{meta: r.metas[r.metaRev], rev: r.metaRev}
}

// decide asks data.chock.decision and checks the answer against the
// contract (toDecision), against the meta of the revision it came from:
// an answer from another revision than the meta read last has the meta
// read again first.
func (r *remoteOPA) decide(ctx context.Context, action string, args []string, phase config.Phase) (*Decision, error) {
	what := fmt.Sprintf("deciding %q", action)
	in := map[string]any{"action": action, "phase": phase.String()}
	if args != nil {
		in["args"] = args
	}
	resp, v, err := r.query(ctx, what, "decision", in)
	if err != nil {
		return nil, err
	}
	rev := resp.revision()
	m, err := r.metaAt(ctx, what, rev)
	if err != nil {
		return nil, err
	}
	d, err := r.accept(v, action, phase, m, resp)
	if err != nil {
		return nil, err
	}
	r.answeredAt(rev)
	return d, nil
}

// accept checks one answer v about action against the contract
// (toDecision) with m, the meta of the revision resp came from, and
// stamps it with resp's decision ID and revision.
func (r *remoteOPA) accept(v any, action string, phase config.Phase, m *remoteMeta, resp *opaResponse) (*Decision, error) {
	d, err := toDecision(v, action, phase, &m.meta)
	if err != nil {
		return nil, r.fail(fmt.Sprintf("deciding %q", action), fmt.Sprintf("opa at %s: %s", r.shown, safetext.Line(err.Error())), err)
	}
	d.ID, d.Revision = resp.DecisionID, m.rev
	return d, nil
}

// metaAt is the meta of revision rev, which an answer came from: the one
// read last, one of the keptMetas read before, or else read again (layers,
// secrets, servers, programs). It is rev's meta or an error, never
// another revision's.
func (r *remoteOPA) metaAt(ctx context.Context, what, rev string) (*remoteMeta, error) {
	m := r.current()
	if rev == m.rev {
		return m, nil
	}
	if m, ok := r.kept(rev); ok {
		return m, nil
	}
	m, err := r.readMeta(ctx, rev)
	if err != nil {
		return nil, fmt.Errorf("%s: the policy changed: %w", what, err)
	}
	return m, nil
}

// answeredAt records the revision of the last answer.
func (r *remoteOPA) answeredAt(rev string) {
	r.mu.Lock()
	r.rev = rev
	r.mu.Unlock()
}

// batchLimit is the most actions one data.chock.decisions query asks
// about: for 493 actions under the example's one-layer policy the answer
// is 166 KB, and OPA takes about 20–25 ms.
const batchLimit = 500

// batchPause is how long a remote engine asks one action at a time after
// data.chock.decisions was refused (errRefusedPath), before it asks for a
// batch again: an OPA restarting can refuse for a moment.
const batchPause = time.Minute

// noBatch says when a remote engine does not ask data.chock.decisions:
// while OPA is at revision rev (whose bundle lacks it: lacking says so),
// or until until (the path was refused).
type noBatch struct {
	lacking bool
	rev     string
	until   time.Time
}

// batchOff says whether data.chock.decisions is not to be asked now.
func (r *remoteOPA) batchOff() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return (r.noBatch.lacking && r.noBatch.rev == r.rev) || time.Now().Before(r.noBatch.until)
}

// decideMany asks data.chock.decisions for the actions, batchLimit at a
// time, and checks each answer as decide does. A bundle without
// data.chock.decisions (compiled by an older chock) is asked one action
// at a time while it is loaded; so is an OPA, or a proxy in front of it,
// that refuses that path (errRefusedPath), for batchPause.
func (r *remoteOPA) decideMany(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error) {
	out := make([]*Decision, 0, len(actions))
	for len(actions) > 0 {
		n := min(len(actions), batchLimit)
		ds, err := r.decideBatch(ctx, actions[:n], phase)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
		actions = actions[n:]
	}
	return out, nil
}

// decideBatch is decideMany for at most batchLimit actions. An answer
// over maxAnswer is asked again in two halves.
func (r *remoteOPA) decideBatch(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error) {
	if len(actions) == 1 || r.batchOff() {
		return r.decideEach(ctx, actions, phase)
	}
	what := fmt.Sprintf("deciding %d actions", len(actions))
	resp, detail, err := r.ask(ctx, http.MethodPost, "chock/decisions", map[string]any{"actions": actions, "phase": phase.String()}, maxAnswer)
	switch {
	case errors.Is(err, errRefusedPath):
		r.mu.Lock()
		r.noBatch.until = time.Now().Add(batchPause)
		r.mu.Unlock()
		return r.decideEach(ctx, actions, phase)
	case errors.Is(err, errTooLarge):
		half := len(actions) / 2
		first, err := r.decideBatch(ctx, actions[:half], phase)
		if err != nil {
			return nil, err
		}
		second, err := r.decideBatch(ctx, actions[half:], phase)
		if err != nil {
			return nil, err
		}
		return append(first, second...), nil
	case err != nil:
		return nil, r.fail(what, detail, err)
	}
	rev := resp.revision()
	v, found, err := resp.result()
	switch {
	case err != nil:
		return nil, r.fail(what, r.notJSON(err), err)
	case !found:
		// Each answer below records its revision (r.rev).
		r.mu.Lock()
		r.noBatch.lacking, r.noBatch.rev = true, rev
		r.mu.Unlock()
		return r.decideEach(ctx, actions, phase)
	}
	m, err := r.metaAt(ctx, what, rev)
	if err != nil {
		return nil, err
	}
	byAction, ok := v.(map[string]any)
	if !ok {
		err := contractErr("data.chock.decisions is not an object")
		return nil, r.fail(what, fmt.Sprintf("opa at %s: %s", r.shown, err), err)
	}
	out := make([]*Decision, len(actions))
	for i, a := range actions {
		v, ok := byAction[asJSON(a)]
		if !ok {
			err := contractErr("asked about %q, data.chock.decisions leaves it out", a)
			return nil, r.fail(fmt.Sprintf("deciding %q", a), fmt.Sprintf("opa at %s: %s", r.shown, err), err)
		}
		if out[i], err = r.accept(v, a, phase, m, resp); err != nil {
			return nil, err
		}
	}
	r.answeredAt(rev)
	return out, nil
}

// each decides each of actions with decide, in order; the first failure
// fails the whole.
func each(actions []string, decide func(string) (*Decision, error)) ([]*Decision, error) {
	out := make([]*Decision, len(actions))
	for i, a := range actions {
		d, err := decide(a)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// decideEach asks about each action on its own.
func (r *remoteOPA) decideEach(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error) {
	return each(actions, func(a string) (*Decision, error) { return r.decide(ctx, a, nil, phase) })
}

// query asks data.chock.DOC with input, and returns the answer and its
// result; any failure is worded for what is asked, as fail words it.
func (r *remoteOPA) query(ctx context.Context, what, doc string, input map[string]any) (*opaResponse, any, error) {
	resp, detail, err := r.ask(ctx, http.MethodPost, "chock/"+doc, input, maxAnswer)
	if err != nil {
		return nil, nil, r.fail(what, detail, err)
	}
	v, found, err := resp.result()
	switch {
	case err != nil:
		return nil, nil, r.fail(what, r.notJSON(err), err)
	case !found:
		return nil, nil, r.fail(what, fmt.Sprintf("opa at %s has no data.chock.%s: chock's bundle is not loaded there", r.shown, doc), nil)
	}
	return resp, v, nil
}

// notJSON words an answer that does not decode.
func (r *remoteOPA) notJSON(err error) string {
	return fmt.Sprintf("opa at %s answered what is not JSON: %v", r.shown, err)
}

// secrets asks data.chock.secrets about a call or a server.
func (r *remoteOPA) secrets(ctx context.Context, t Target) ([]Secret, error) {
	in, what := map[string]any{"server": t.Server}, fmt.Sprintf("the secrets of server %q", t.Server)
	if t.Action != "" {
		in, what = map[string]any{"action": t.Action}, fmt.Sprintf("the secrets of %q", t.Action)
	}
	_, v, err := r.query(ctx, what, "secrets", in)
	if err != nil {
		return nil, err
	}
	out, err := secretsAnswer(v)
	if err != nil {
		return nil, r.fail(what, fmt.Sprintf("opa at %s: %s", r.shown, safetext.Line(err.Error())), err)
	}
	return out, nil
}

// meta is the policy's meta as read last.
func (r *remoteOPA) meta() Meta {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metas[r.metaRev]
}

// revision is the revision the last answer came from.
func (r *remoteOPA) revision() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rev
}
