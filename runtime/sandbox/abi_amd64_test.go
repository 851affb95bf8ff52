package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOtherABIRefused: memfd_create through the i386 ABI (int $0x80 from
// a 64-bit program) gets ENOSYS, as every call through another ABI does:
// the filter's checks of this ABI's calls cannot be gone round.
func TestOtherABIRefused(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal("gcc is needed to build the i386-ABI caller")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "m.c")
	os.WriteFile(src, []byte(`#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int main(void) {
  char *low = mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_32BIT, -1, 0);
  strcpy(low, "x");
  long r;
  asm volatile ("int $0x80" : "=a"(r) : "a"(356), "b"((long)low), "c"(1) : "memory");
  printf("i386 memfd_create: %ld\n", r);
  return 0;
}
`), 0o644)
	bin := filepath.Join(dir, "m")
	if out, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, _, _ := run(t, &Spec{Path: bin, Argv: []string{"m"}, Exec: interp(t, bin), Notify: true})
	if !strings.Contains(out, "i386 memfd_create: -38") {
		t.Fatalf("want ENOSYS (-38): %q", out)
	}
}
