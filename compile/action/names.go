package action

import "strings"

// The limits of a session, owned here so lint states them as the run time
// enforces them.
const (
	// MaxServers is how many MCP servers a session may have.
	MaxServers = 8
	// MaxTools is how many tools one MCP server may declare.
	MaxTools = 64
	// MaxSlots is how many secrets one call or server may hold: one
	// redaction slot each.
	MaxSlots = 8
	// MinSecretLen is the shortest value that can be a secret: a shorter
	// one could not be redacted without mangling ordinary text.
	MinSecretLen = 4
)

// Name rules, one each, for lint, login and the run time.

// ValidSecretName says whether s can name a secret: letters, digits and
// '_', so secret.use.NAME is one action and never a class.
func ValidSecretName(s string) bool { return s != "" && all(s, isWord) }

// SecretNameRule words ValidSecretName for a message.
const SecretNameRule = "letters, digits and '_' only"

// ValidServerName says whether s can name an MCP server: letters, digits,
// '_' and '-', so mcp.NAME.* is one server's namespace.
func ValidServerName(s string) bool {
	return s != "" && all(s, func(c byte) bool { return isWord(c) || c == '-' })
}

// ServerNameRule words ValidServerName for a message.
const ServerNameRule = "letters, digits, '_' and '-' only"

// ValidEnvName says whether s can name an environment variable a secret
// arrives under: [A-Za-z_][A-Za-z0-9_]*.
func ValidEnvName(s string) bool {
	return s != "" && (s[0] < '0' || s[0] > '9') && all(s, isWord)
}

// EnvNameRule words ValidEnvName for a message.
const EnvNameRule = "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"

// HeaderNameRule words ValidHeaderName for a message.
const HeaderNameRule = "an HTTP header name (an RFC 9110 token)"

// ValidHeaderName says whether s is an HTTP header name (RFC 9110 token).
func ValidHeaderName(s string) bool {
	return s != "" && all(s, func(c byte) bool { return isWord(c) || strings.IndexByte("!#$%&'*+-.^`|~", c) >= 0 })
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// MaxOrgNameLen is the longest org name that can root a bundle of its own.
const MaxOrgNameLen = 63

// ValidOrgName says whether s can name an org whose bundle stands on its
// own or is linked by name: lower-case letters, digits, '_' and '-',
// starting with a letter or digit, at most MaxOrgNameLen bytes. Such a name
// is one segment of a bundle root (chock_orgs/NAME), one key of a Rego
// package (chock_orgs["NAME"]) and one path segment of a module file.
func ValidOrgName(s string) bool {
	if s == "" || len(s) > MaxOrgNameLen || s[0] == '_' || s[0] == '-' {
		return false
	}
	return all(s, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' })
}

// OrgNameRule words ValidOrgName for a message.
const OrgNameRule = "lower-case letters, digits, '_' and '-', starting with a letter or digit, at most 63 bytes"
