package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/sessionlog"
	"golang.org/x/net/http/httpguts"
)

// grantee is what secrets are given to: a call of a program (loop phase,
// where an ask is put to the person) or an MCP server (start phase, where
// only allow gives).
type grantee struct {
	target eval.Target
	// action is what secret.used names: the call's action, or mcp.S.
	action string
	phase  config.Phase
	// parent names the call ("c3") or the server ("server:S") in the log;
	// it is also the redaction slot the values fill.
	parent string
	// server is set for a server: remote takes headers, local its
	// environment.
	server, remote bool
}

// grant is one secret given, with its value (and, for a header bind, the
// header value it is sent as).
type grant struct {
	sec    eval.Secret
	value  string
	header string
}

// grants decides and reads the secrets offered to g: each is asked under
// secret.use.NAME at g's phase, checked against how g can take it, and
// read from the store. A secret that refuses the whole grant gives a
// *RefusedError (its Action left for the caller); a secret g cannot take
// in its bind (a server and a file) is skipped with an event. err is a
// failure to decide or to log.
func (s *Session) grants(ctx context.Context, g grantee) ([]grant, *RefusedError, error) {
	offered, err := s.engine(ctx).Secrets(ctx, g.target)
	if err != nil {
		return nil, nil, err
	}
	refuse := func(sec string, format string, args ...any) *RefusedError {
		return &RefusedError{Reason: fmt.Sprintf("secret %s: ", sec) + fmt.Sprintf(format, args...)}
	}
	var out []grant
	for _, sec := range offered {
		// What g cannot take in its bind is settled before anybody is asked.
		skip, why := g.takes(sec)
		if why != "" {
			return nil, refuse(sec.Name, "%s", why), nil
		}
		if skip != "" {
			if err := s.event("secret.skipped", sessionlog.F("name", sec.Name), sessionlog.F("server", g.target.Server), sessionlog.F("why", skip)); err != nil {
				return nil, nil, err
			}
			continue
		}
		d, err := s.decide(ctx, "secret.use."+sec.Name, g.phase, g.parent)
		if err != nil {
			return nil, nil, err
		}
		if g.phase == config.Start {
			if d.Decision != config.Allow {
				return nil, refuse(sec.Name, "%s", s.refusal(d)), nil
			}
		} else if err := s.permit(ctx, d, g.parent); err != nil {
			var r *RefusedError
			if !errors.As(err, &r) {
				return nil, nil, err
			}
			return nil, &RefusedError{Reason: fmt.Sprintf("secret %s: %s", sec.Name, r.Reason), Explanation: r.Explanation}, nil
		}
		value, why := s.secretValue(ctx, sec.Name)
		if why != "" {
			return nil, &RefusedError{Reason: why}, nil
		}
		gr := grant{sec: sec, value: value}
		if sec.Bind == config.BindHeader {
			h, ok := header(sec, value)
			if !ok {
				// Not sent at all: the server starts without it.
				if err := s.event("secret.skipped", sessionlog.F("name", sec.Name), sessionlog.F("server", g.target.Server),
					sessionlog.F("why", fmt.Sprintf("the value holds a byte header %s cannot carry, so it is not sent and the server starts without it", sec.As))); err != nil {
					return nil, nil, err
				}
				continue
			}
			gr.header = h
		}
		out = append(out, gr)
	}
	if len(out) > action.MaxSlots {
		noun := "call"
		if g.server {
			noun = "server"
		}
		return nil, &RefusedError{Reason: fmt.Sprintf("the %s is granted %d secrets; a %s has %d redaction slots", noun, len(out), noun, action.MaxSlots)}, nil
	}
	return out, nil, nil
}

// takes says whether g can take a secret in its bind (config.Binds): skip
// says why it is given nothing (and goes on without it), refuse why the
// grant fails.
func (g grantee) takes(sec eval.Secret) (skip, refuse string) {
	h := config.HolderProgram
	switch {
	case g.server && g.remote:
		h = config.HolderRemote
	case g.server:
		h = config.HolderLocal
	}
	m := sec.Bind.Fits(h)
	if m.Refuse {
		return "", m.Why
	}
	return m.Why, ""
}

// header is the header a secret bound as one is sent as, and whether it
// can be: Authorization carries "Bearer <value>", a named header the value
// alone; a value holding a byte a header cannot carry is not sent.
func header(sec eval.Secret, value string) (string, bool) {
	v := value
	if strings.EqualFold(sec.As, "Authorization") {
		v = "Bearer " + value
	}
	return v, httpguts.ValidHeaderFieldValue(v) && httpguts.ValidHeaderFieldName(sec.As)
}

// give records a grant given: its value fills g's redaction slot (a
// server's stays filled for the session, a call's is emptied when it
// ends), and secret.used goes to the log, stamped as every event is and
// naming what took the secret: the call ("call":"c3"), or the server
// ("server":"S") for a secret given when it starts.
func (s *Session) give(g grantee, gr grant) error {
	s.redact.Add(g.parent, gr.sec.Name, gr.value)
	taker := sessionlog.F("call", g.parent)
	if g.server {
		taker = sessionlog.F("server", g.target.Server)
	}
	if err := s.event("secret.used", sessionlog.F("name", gr.sec.Name), sessionlog.F("action", g.action), taker,
		sessionlog.F("bind", gr.sec.Bind.String()), sessionlog.F("variable", gr.sec.As)); err != nil {
		return fmt.Errorf("session log: %w", err)
	}
	return nil
}

// secretValue reads a secret from the store; why says why it could not be.
func (s *Session) secretValue(ctx context.Context, name string) (value, why string) {
	if s.opts.Store == nil {
		return "", fmt.Sprintf("secret %s: no credential store is configured", name)
	}
	v, err := s.opts.Store.Get(ctx, name)
	if err != nil {
		if errors.Is(err, credstore.ErrNotFound) {
			return "", fmt.Sprintf("secret %s is not in the %s store (%s)", name, s.opts.Store.Name(), credstore.HowToStore(s.opts.Store, name))
		}
		return "", fmt.Sprintf("secret %s could not be read from the %s store: %v", name, s.opts.Store.Name(), err)
	}
	if len(v) < action.MinSecretLen {
		return "", fmt.Sprintf("secret %s is shorter than %d bytes and could not be redacted", name, action.MinSecretLen)
	}
	return v, ""
}
