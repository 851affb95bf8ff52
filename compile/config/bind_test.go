package config

import "testing"

// TestBindTable checks every row of the bind table says what lint and the
// run time need, and that each bind has its row.
func TestBindTable(t *testing.T) {
	for i, r := range Binds {
		if r.Bind != Bind(i) || r.ValidAs == nil || r.AsRule == "" {
			t.Errorf("row %d (%s) is incomplete", i, r.Bind)
		}
		for h, m := range r.Misfits {
			if m.Code != "" && (m.Lint == "" || m.Hint == "" || m.Why == "") {
				t.Errorf("%s for holder %d: a misfit without its texts", r.Bind, h)
			}
		}
	}
	if m := BindHeader.Fits(HolderRemote); m.Code != "" {
		t.Errorf("a remote server does not take a header: %+v", m)
	}
	if m := BindHeader.Fits(HolderProgram); !m.Refuse {
		t.Errorf("a header to a program does not refuse the call")
	}
	if m := Bind(7).Fits(HolderProgram); !m.Refuse || m.Code != CodeUnknownBind {
		t.Errorf("an unknown bind is taken: %+v", m)
	}
	if !BindHeader.Rule().ValidAs("X-Api-Key") || BindEnv.Rule().ValidAs("X-Api-Key") {
		t.Error("names .as may give are checked by the wrong row")
	}
}
