// Command chock-sandbox is the init of chock's exec sandboxes: chock
// starts it in a call's new namespaces, and it builds the sandbox and
// execs the call's program (see package runtime/sandbox). It is small so
// that it starts in about a millisecond; chock falls back to running
// itself as the init when this binary is not beside it.
package main

import (
	"fmt"
	"os"

	"github.com/chockhq/chock/runtime/sandbox"
)

func main() {
	sandbox.MaybeInit()
	fmt.Fprintln(os.Stderr, "chock-sandbox is started by chock to make an exec sandbox; it is not run by hand")
	os.Exit(2)
}
