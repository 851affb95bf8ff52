package main

import (
	"strings"
	"testing"
)

// TestTable: a header, columns aligned two spaces apart, and a cell's tab
// or line break cannot add a column or a line.
func TestTable(t *testing.T) {
	var b strings.Builder
	tab := newTable(&b, "A", "LONGER")
	tab.row("x\ty", "1")
	tab.row("two\nlines", "22")
	if err := tab.flush(); err != nil {
		t.Fatal(err)
	}
	want := "A             LONGER\n" +
		`x\x09y        1` + "\n" +
		`two\x0alines  22` + "\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
