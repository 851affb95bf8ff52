package config

import "github.com/chockhq/chock/compile/action"

// Holder is what a secret is given to: a call's program or an MCP server,
// which takes secrets by the way it is reached.
type Holder int

// Holders.
const (
	HolderProgram Holder = iota // a call's program: its environment or a file
	HolderLocal                 // an MCP server chock starts (.command): its environment
	HolderRemote                // an MCP server at a URL: a header of its requests
	holders
)

// The lint codes of the bind table.
const (
	CodeSecretFileToServer = "secret-file-to-server"
	CodeSecretHeaderToExec = "secret-header-to-program"
	CodeSecretEnvToURL     = "secret-env-to-url-server"
	CodeSecretHeaderToCmd  = "secret-header-to-command-server"
)

// BindRule is one row of the bind table: how a secret of that bind arrives
// and which holders cannot take it. Lint, the run time and the check of a
// policy's secrets answer all read it.
type BindRule struct {
	Bind Bind
	// ValidAs checks a name .as gives; AsRule words it.
	ValidAs func(string) bool
	AsRule  string
	// Default is the name it arrives under when .as is empty; "" is the
	// secret's own name.
	Default string
	// Misfits says, by holder, why that holder cannot take the bind; the
	// zero Misfit takes it.
	Misfits [holders]Misfit
}

// Misfit is why a holder cannot take a bind, as lint says it and as the
// run time does.
type Misfit struct {
	// Code is lint's code; "" means the holder takes the bind.
	Code string
	// Refuse says the grant fails (the call is refused); otherwise the
	// holder goes on without the secret.
	Refuse bool
	// Lint is lint's message, a format of the secret's name (%[1]s) and of
	// what it is for (%[2]q: its .to, or the server's name); Hint its hint.
	Lint, Hint string
	// Why is the run time's reason.
	Why string
}

// fileToServer is the one misfit of a file bind, for a server of either
// kind: lint says it once, of the entry's .to.
var fileToServer = Misfit{
	Code: CodeSecretFileToServer,
	Lint: "secret %s binds as a file to %q; a server is not given a file, so it gets nothing",
	Hint: `use bind = "env" for a command server or "header" for a url server`,
	Why:  "an MCP server is not given a file: it holds what it is given for the whole session, so the file would have to live that long",
}

// Binds is the bind table, one row a bind, in Bind's order.
var Binds = [...]BindRule{
	BindEnv: {Bind: BindEnv, ValidAs: action.ValidEnvName, AsRule: action.EnvNameRule,
		Misfits: [holders]Misfit{HolderRemote: {
			Code: CodeSecretEnvToURL,
			Lint: "secret %s binds as env to %q, a remote server with no environment of ours",
			Hint: `use bind = "header"`,
			Why:  "a remote server takes a credential as a header, and this entry binds as env",
		}}},
	BindFile: {Bind: BindFile, ValidAs: action.ValidEnvName, AsRule: action.EnvNameRule,
		Misfits: [holders]Misfit{HolderLocal: fileToServer, HolderRemote: fileToServer}},
	BindHeader: {Bind: BindHeader, ValidAs: action.ValidHeaderName, AsRule: action.HeaderNameRule, Default: "Authorization",
		Misfits: [holders]Misfit{
			HolderProgram: {
				Code: CodeSecretHeaderToExec, Refuse: true,
				Lint: "secret %s binds as a header to %q, a program",
				Hint: `a program takes bind = "env" or "file"; only a remote server takes a header`,
				Why:  "it binds as a header, which a program cannot take",
			},
			HolderLocal: {
				Code: CodeSecretHeaderToCmd,
				Lint: "secret %s binds as a header to %q, a local server that reads its environment",
				Hint: `use bind = "env"`,
				Why:  "a local server takes its secrets in its environment, and this entry binds as a header",
			},
		}},
}

// Rule is b's row of the bind table; a bind chock does not know has the
// env row's names and is taken by nobody.
func (b Bind) Rule() BindRule {
	if b < 0 || int(b) >= len(Binds) {
		unknown := Misfit{Code: CodeUnknownBind, Refuse: true, Why: "it binds in a way chock does not know"}
		return BindRule{Bind: b, ValidAs: action.ValidEnvName, AsRule: action.EnvNameRule,
			Misfits: [holders]Misfit{unknown, unknown, unknown}}
	}
	return Binds[b]
}

// Fits says how holder h takes a secret bound as b: the zero Misfit when
// it does.
func (b Bind) Fits(h Holder) Misfit { return b.Rule().Misfits[h] }

// Holder is the holder a server is: remote when it has a URL and no
// command, local otherwise.
func (s *Server) Holder() Holder {
	if s.URL.Set && !s.Command.Set {
		return HolderRemote
	}
	return HolderLocal
}
