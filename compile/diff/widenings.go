package diff

// Widenings are the report's entries that widen, each in one line as
// WriteText begins it: what widened and, for a decision, how and when.
func (r *Report) Widenings() []string {
	var out []string
	for _, e := range r.entries() {
		if e.kind != Widened {
			continue
		}
		line := e.what
		if e.change != "" {
			line += "  " + e.change + " " + phaseText(e.phases)
		}
		out = append(out, line)
	}
	return out
}
