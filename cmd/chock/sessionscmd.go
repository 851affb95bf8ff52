package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/spf13/cobra"
)

// newSessionsCmd is `chock sessions list` and `chock sessions show ID [--json]`.
func newSessionsCmd(std stdio) *cobra.Command {
	prefix := map[string]string{prefixAnnotation: "chock sessions"}
	logDir := func() (string, error) {
		dir, err := sessionlog.DefaultDir()
		if err != nil {
			return "", failed(exitFailed, err)
		}
		return dir, nil
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "list the session logs",
		Long: `list prints a table of the session logs under $CHOCK_STATE_DIR (default
~/.local/state/chock), a header and one row per log: its id, start time,
policy revision, number of events, and whether it ended.`,
		Args:        noArgs,
		Annotations: prefix,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := logDir()
			if err != nil {
				return err
			}
			infos, err := sessionlog.List(dir)
			if err != nil {
				return failed(exitFailed, err)
			}
			tab := newTable(std.out, "SESSION", "STARTED", "POLICY", "EVENTS", "STATE")
			for _, in := range infos {
				state := "open"
				if in.Ended {
					state = "ended"
				}
				tab.row(in.ID, in.Start.Format(time.RFC3339), eval.ShortRevision(in.Revision), strconv.Itoa(in.Events), state)
			}
			return tab.flush()
		},
	}
	var asJSON bool
	show := &cobra.Command{
		Use:   "show [--json] ID",
		Short: "print a session's log, one line per event",
		Long: `show prints the log of session ID one line per event: time, kind, then
key=value; --json prints the events as the log holds them.`,
		Args:        exactArgs(1),
		Annotations: prefix,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := logDir()
			if err != nil {
				return err
			}
			if asJSON {
				lines, err := sessionlog.ReadLines(dir, args[0])
				if err != nil {
					return failed(exitFailed, err)
				}
				for _, l := range lines {
					std.raw.Write(safetext.JSON(append([]byte(l), '\n')))
				}
				return nil
			}
			evs, err := sessionlog.Read(dir, args[0])
			if err != nil {
				return failed(exitFailed, err)
			}
			for _, ev := range evs {
				fmt.Fprintln(std.out, eventLine(ev))
			}
			return nil
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print the events as the log holds them, one JSON object a line")
	return newGroupCmd(std, "sessions COMMAND", "the session logs", list, show)
}

// eventLine renders an event on one line: time, kind, then key=value.
func eventLine(ev sessionlog.Event) string {
	var b strings.Builder
	if t, ok := ev["time"].(string); ok {
		b.WriteString(t)
		b.WriteString("  ")
	}
	kind, _ := ev["kind"].(string)
	b.WriteString(kind)
	keys := make([]string, 0, len(ev))
	for k := range ev {
		if k != "kind" && k != "time" {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	for _, k := range keys {
		v := ev[k]
		var s string
		switch x := v.(type) {
		case string:
			s = x
			if strings.ContainsAny(s, " \n\t\"") || s == "" {
				q, _ := json.Marshal(s)
				s = string(q)
			}
		default:
			q, _ := json.Marshal(x)
			s = string(q)
		}
		fmt.Fprintf(&b, " %s=%s", k, s)
	}
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
