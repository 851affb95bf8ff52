package ci

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the tools the tests shared (the go shim, the chock
// they built) once they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if toolsVal.shimDir != "" {
		os.RemoveAll(filepath.Dir(toolsVal.shimDir))
	}
	os.Exit(code)
}
