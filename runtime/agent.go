package runtime

import (
	"context"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/sessionlog"
)

// What a driver that speaks for a live agent (the MCP gateway) needs of a
// session besides Run: the tools a started server declared, to offer them
// again; a line of its own in the log; and the questions a call would put,
// before it runs, for a client that answers them in a round of its own.

// ServerTools are the tools server name declared at start, in its order;
// nil when it was left out or is not configured. Everything in them is the
// server's own, untrusted and unredacted: a driver that hands them on
// redacts them (Redactor) and strips them first.
func (s *Session) ServerTools(name string) []mcpconn.Tool {
	sv := s.server(name)
	if sv == nil || sv.conn == nil {
		return nil
	}
	return sv.conn.Tools()
}

// Record writes a driver's own event to the session log (a client
// connecting, the policy swapped under the session), redacted as every
// event is.
func (s *Session) Record(kind string, fields ...sessionlog.Field) error {
	s.sessionEvent(kind, fields)
	return s.event(kind, fields...)
}

// Questions are the asks the chain would put for c if it ran now, in the
// order it would put them: the call's own action when the policy asks,
// then, for a program, each offered secret whose secret.use the policy
// asks. Nothing is logged and nothing is granted; decisions are looked
// at, as ServerStatus's are. A call the chain would refuse whatever the
// answers (a denied action or secret, a secret in a bind the program
// cannot take, a malformed call) has no questions: the chain refuses it
// with the reason when it runs. The chain still decides and asks as
// always; a driver that put these questions first hands their answers to
// its Asker, and anything it did not foresee is asked there.
func (s *Session) Questions(ctx context.Context, c *Call) ([]Question, error) {
	act := c.Action
	if act == "" {
		a, err := callAction(c)
		if err != nil {
			return nil, nil
		}
		act = a
	}
	onPath := true
	if c.Exec != nil {
		// The program is the file its name means on the session's PATH,
		// as Run resolves it: a program it does not name is refused.
		a, r, identity, err := s.program(c.Exec)
		if identity != nil || err != nil {
			return nil, nil
		}
		act, onPath = a, r.OnPath
	}
	var qs []Question
	ask := func(a string) (refused bool, err error) {
		if s.holdsSecret(a) {
			return true, nil
		}
		// The call's own decisions are logged when it runs.
		d, err := s.engine(ctx).DecideUnlogged(ctx, a, config.Loop)
		if err != nil {
			return false, err
		}
		switch d.Decision {
		case config.Deny:
			return true, nil
		case config.Ask:
			qs = append(qs, Question{Action: a, Phase: config.Loop, Explanation: eval.Explain(d, s.opts.Config)})
		}
		return false, nil
	}
	if refused, err := ask(act); refused || err != nil {
		return nil, err
	}
	if c.Exec == nil || c.Exec.Background || !onPath {
		return qs, nil // only a program on the PATH is given secrets
	}
	offered, err := s.engine(ctx).Secrets(ctx, eval.Target{Action: act})
	if err != nil {
		return nil, err
	}
	g := grantee{target: eval.Target{Action: act}, action: act, phase: config.Loop}
	for _, sec := range offered {
		skip, why := g.takes(sec)
		if why != "" {
			return nil, nil
		}
		if skip != "" {
			continue
		}
		if refused, err := ask("secret.use." + sec.Name); refused || err != nil {
			return nil, err
		}
	}
	return qs, nil
}
