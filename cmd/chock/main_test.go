package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	"github.com/chockhq/chock/internal/mcptest"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"chock": func() {
			os.Exit(run(context.Background(), os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
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
			"genkey":  genkey,
			"keyring": keyringCmd,
		},
		Condition: keyringCondition,
	})
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
