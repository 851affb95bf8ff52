package zon

import "testing"

// TestIsKeyword: the switch the scanner asks is the keyword table.
func TestIsKeyword(t *testing.T) {
	for k := range keywords {
		if !isKeyword(k) {
			t.Errorf("%s is a keyword", k)
		}
	}
	for _, s := range []string{"", "x", "ifx", "whil", "true", "null", "Struct"} {
		if isKeyword(s) != keywords[s] {
			t.Errorf("%q", s)
		}
	}
}
