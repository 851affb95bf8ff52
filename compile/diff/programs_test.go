package diff

import (
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
)

func TestProgramChanges(t *testing.T) {
	load := func(src string) Side {
		c, ds := config.Load("chock.zon", []byte(src))
		if c == nil || ds.HasErrors() {
			t.Fatalf("%s: %v", src, ds)
		}
		return Side{Config: c}
	}
	old := load(`.{ .programs = .{ .{ .name = "gh", .paths = .{"/usr/bin/gh"} }, .{ .name = "git", .calls = .{"exec.path.git-remote-https"} }, .{ .name = "python3", .connects = .{"net.connect.org.example"} } } }`)
	cur := load(`.{ .programs = .{ .{ .name = "gh", .paths = .{"/usr/bin/gh", "/opt/gh"} }, .{ .name = "git", .calls = .{"exec.path.sh"} }, .{ .name = "jq", .paths = .{"/usr/bin/jq"} }, .{ .name = "python3", .connects = .{"net.connect.org.pypi.*"} } } }`)
	rep, err := Diff(old, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Programs {
		got = append(got, p.Kind+" "+p.Name+" "+p.Change)
	}
	want := []string{
		"widened gh may now run as /opt/gh",
		"widened git newly declares exec.path.sh (it may run it inside its calls)",
		"narrowed git no longer declares exec.path.git-remote-https",
		"narrowed jq pinned to /usr/bin/jq",
		"widened python3 newly declares net.connect.org.pypi.* (its calls may reach those hosts)",
		"narrowed python3 no longer declares net.connect.org.example",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !rep.Widened() {
		t.Error("a newly declared call is a widening")
	}
	if same, _ := Diff(old, old, Options{}); !same.Empty() {
		t.Errorf("a policy against itself: %+v", same.Programs)
	}
}
