package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/chockhq/chock/runtime/sandbox"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/chockhq/chock/internal/clienttest"
	"github.com/chockhq/chock/internal/mcptest"
	"github.com/rogpeppe/go-internal/testscript"
)

// asChockEnv makes the test binary run as chock itself, under the stop
// signals, for tests that start it as a process of its own.
const asChockEnv = "CHOCK_TEST_AS_CHOCK"

func TestMain(m *testing.M) {
	sandbox.MaybeInit()
	clienttest.MaybeRun() // a real agent client, offline, in a network namespace of its own
	mcptest.MaybeServe()  // the helper MCP server a gateway test's session starts
	if os.Getenv(asChockEnv) == "1" {
		os.Exit(runWithSignals(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
	}
	testscript.Main(m, map[string]func(){
		"chock": func() {
			os.Exit(runWithSignals(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
		},
		// mcptest-server [TOOL...] is a stdio MCP server with echo, env and
		// net, plus the tools named.
		"mcptest-server": func() { mcptest.ServeStdio(strings.Join(os.Args[1:], ",")) },
	})
}

// TestScripts runs testdata/scripts/*.txtar. UPDATE_GOLDEN=1 rewrites the
// golden sections of failing cmp commands.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/scripts",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("UPDATE_GOLDEN") == "1",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  exitcode,
			"genkey":    genkey,
			"keyring":   keyringCmd,
			"mkfifo":    mkfifo,
			"stat":      statCmd,
			"tarbundle": tarbundle,
		},
		Condition: keyringCondition,
	})
}

// exitcode N PROG [ARG...] runs PROG as exec does and checks that it
// exits with status N; stdout and stderr are kept for the commands after.
func exitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// genkey PRIV PUB writes a fresh RSA key pair as PEM files.
func genkey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: genkey PRIV PUB")
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	ts.Check(err)
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	ts.Check(err)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), priv, 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), pub, 0o644))
}

// mkfifo PATH makes a named pipe.
func mkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkfifo PATH")
	}
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
}

// stat PATH KIND [PERM] checks what PATH is, without following a symlink:
// regular, symlink, fifo, chardev or dir, and its permission bits.
func statCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: stat PATH regular|symlink|fifo|chardev|dir [PERM]")
	}
	fi, err := os.Lstat(ts.MkAbs(args[0]))
	ts.Check(err)
	m := fi.Mode()
	kind := "regular"
	switch {
	case m&fs.ModeSymlink != 0:
		kind = "symlink"
	case m&fs.ModeNamedPipe != 0:
		kind = "fifo"
	case m&fs.ModeCharDevice != 0:
		kind = "chardev"
	case m.IsDir():
		kind = "dir"
	case !m.IsRegular():
		kind = m.Type().String()
	}
	if kind != args[1] {
		ts.Fatalf("%s is a %s, want %s", args[0], kind, args[1])
	}
	if len(args) == 3 {
		if got := fmt.Sprintf("%04o", m.Perm()); got != args[2] {
			ts.Fatalf("%s has mode %s, want %s", args[0], got, args[2])
		}
	}
}

// tarbundle DIR OUT writes the files under DIR as a .tar.gz bundle, as
// opa build lays one out (chock's own marker file left out): a bundle
// edited by hand.
func tarbundle(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tarbundle DIR OUT")
	}
	dir := ts.MkAbs(args[0])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	ts.Check(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".chock-written" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if err := tw.WriteHeader(&tar.Header{Name: "/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	}))
	ts.Check(tw.Close())
	ts.Check(zw.Close())
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), buf.Bytes(), 0o644))
}
