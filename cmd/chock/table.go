package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/chockhq/chock/internal/safetext"
)

// table is the one writer of chock's tabular text output: a header row,
// then rows of cells, written as columns aligned with text/tabwriter, two
// spaces apart. Each cell is shown on one line (safetext.Line, which
// escapes a tab too): a value from a policy or a log cannot add a line or
// a column.
type table struct {
	tw *tabwriter.Writer
}

// newTable starts a table on w under header (no header row when there is
// none).
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row adds a row.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = safetext.Line(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// flush writes the table out, its columns aligned.
func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return fmt.Errorf("writing a table: %w", err)
	}
	return nil
}
