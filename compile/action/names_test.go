package action

import (
	"strings"
	"testing"
)

func TestNameRules(t *testing.T) {
	for _, c := range []struct {
		valid func(string) bool
		ok    []string
		bad   []string
	}{
		{ValidSecretName, []string{"GITHUB_TOKEN", "a", "_1"}, []string{"", "A.B", "A-B", "A B", "É"}},
		{ValidServerName, []string{"notion", "my-server_2"}, []string{"", "a.b", "a b", "a*"}},
		{ValidEnvName, []string{"GOOGLE_APPLICATION_CREDENTIALS", "_x"}, []string{"", "1X", "A-B", "A.B"}},
		{ValidOrgName, []string{"acme", "x-y", "a_1", "9lives", strings.Repeat("a", 63)}, []string{"", "Acme", "a.b", "a/b", "-a", "_a", "a b", "a\"b", "é", strings.Repeat("a", 64)}},
		{ValidHeaderName, []string{"Authorization", "X-Api-Key", "a!#$%&'*+-.^`|~"}, []string{"", "a b", "a:b", "a\r", "é"}},
	} {
		for _, s := range c.ok {
			if !c.valid(s) {
				t.Errorf("%q refused", s)
			}
		}
		for _, s := range c.bad {
			if c.valid(s) {
				t.Errorf("%q accepted", s)
			}
		}
	}
}

func TestConnect(t *testing.T) {
	for in, want := range map[string]string{
		"pypi.org": "net.connect.org.pypi", "Files.PythonHosted.org.": "net.connect.org.pythonhosted.files",
		"10.0.0.7": "net.connect.10.0.0.7", "2001:db8::1": "net.connect.[2001:db8::1]", "[2001:DB8::1]": "net.connect.[2001:db8::1]",
	} {
		if got, err := Connect(in); err != nil || got != want {
			t.Errorf("Connect(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := Connect("a..b"); err == nil {
		t.Errorf("Connect(a..b) = %q", got)
	}
}
