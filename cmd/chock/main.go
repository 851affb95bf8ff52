// Command chock is the policy toolchain of the Chock agent harness: it reads
// chock.zon, lints and compiles it, explains decisions and runs sessions.
package main

import (
	"os"

	"github.com/chockhq/chock/runtime/sandbox"
)

func main() {
	// A sandbox init started from this binary never gets further.
	sandbox.MaybeInit()
	os.Exit(runWithSignals(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}
