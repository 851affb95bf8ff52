package compile

import (
	"bytes"
	"testing"

	"github.com/chockhq/chock/compile/config"
)

// FuzzReadBundle feeds arbitrary bytes, and mutations of real bundles, to
// the one bundle reader: it must refuse or read them, never panic, and an
// org bundle it reads must rebuild.
func FuzzReadBundle(f *testing.F) {
	c, _ := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{"exec.path.gh"} } }`))
	out, _ := Compile(Input{Config: c})
	var b bytes.Buffer
	out.WriteBundle(&b, nil)
	f.Add(b.Bytes())
	o, _ := config.LoadOrg("org.zon", []byte(`.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh"} } }`))
	oout, _ := Compile(Input{Orgs: []*config.Org{o}})
	b.Reset()
	oout.WriteBundle(&b, nil)
	f.Add(b.Bytes())
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			if bd, err := ReadBundle(bytes.NewReader(data), ReadOptions{SkipVerify: skip}); err == nil {
				MetaOf(bd.Data)
			}
			ReadOrgBundle("fuzz.tar.gz", bytes.NewReader(data), ReadOptions{SkipVerify: skip})
		}
	})
}
