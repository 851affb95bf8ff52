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
