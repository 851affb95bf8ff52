// Package sandbox runs one exec call in a sandbox of its own (Linux,
// unprivileged, no setuid helper): new user, pid and mount namespaces with
// their own /proc, every directory a program comes from mounted read-only,
// the files the call may execute fixed by a Landlock ruleset, and its
// execve calls reported to chock through a seccomp user notification so
// that each nested exec can be logged. The call's program is pid 1 of its
// pid namespace: when it exits, the kernel kills everything it left,
// setsid and double-forked children included.
//
// Go cannot run code between fork and exec, so the sandbox is made by a
// small init: chock starts a binary (chock-sandbox beside chock, or chock
// itself) in the new namespaces with argv[0] InitArg; MaybeInit, called
// first thing in main, recognises it, reads the Spec from fd 3, builds the
// sandbox and execs the program.
package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// InitArg is argv[0] of the init: the sign that a binary runs as it.
const InitArg = "chock-sandbox-init"

// Spec is what one sandboxed call runs.
type Spec struct {
	// Path is the program's file (absolute, symlinks resolved); Argv its
	// arguments, Argv[0] as the agent gave it.
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// Dir is the working directory, an absolute path ("" is the one the
	// init was started in). The init enters it by this path after every
	// mount, so relative paths resolve in the sandbox's file system.
	Dir string `json:"dir,omitempty"`
	// Writable are the only directories a call may write (the project,
	// the temporary folders, what --writable adds): everything else is
	// mounted read-only, so no call renames a folder above a protected one
	// or plants a file where a later session looks.
	Writable []string `json:"writable"`
	// ReadOnly are the directories and files bind-mounted read-only inside
	// (over the writable ones too): program folders, chock's own, the
	// policy's files. Each must still be there: one gone since the session
	// started refuses the call.
	ReadOnly []string `json:"read_only"`
	// Hide are paths covered inside: a directory by an empty read-only
	// tmpfs, anything else by /dev/null (the credential store, the
	// session logs, the keyring's bus socket).
	Hide []string `json:"hide,omitempty"`
	// Exec are the files any process of the call may execute; Landlock
	// refuses every other execve. Path must be one of them.
	Exec []string `json:"exec"`
	// AnyExec leaves execution to the file system's own modes: no
	// Landlock execute set and no exec watch (Exec and Notify are not
	// read). It is for a local MCP server, which runs what it was built
	// to run.
	AnyExec bool `json:"any_exec,omitempty"`
	// Interpreters are the ELF interpreters among Exec (ld.so, by every
	// path that opens it) that no execve may name: the kernel loads each
	// for the programs whose PT_INTERP names it, but one run as the
	// program would load and run any file it is given, so the watch
	// refuses an execve of it (Notify). Only chock's side reads it.
	Interpreters []string `json:"interpreters,omitempty"`
	// Decided are files among Exec whose execs the watch reads the
	// arguments of and asks Cmd.Verdict about: programs a rule with .args
	// may refuse by what they are given. Parent side only.
	Decided []string `json:"-"`
	// Files are file-bound secrets, written on a tmpfs mounted at FileDir
	// inside the sandbox only, then made read-only.
	FileDir string       `json:"file_dir,omitempty"`
	Files   []SecretFile `json:"files,omitempty"`
	// Private are the session's own temporary folders: each Host folder
	// (made by the session, shared by its calls only) is bind-mounted,
	// writable, at At (/tmp, /var/tmp, /dev/shm), so no socket or file the
	// person has there is reachable. A path of the spec under an At (the
	// working directory, a writable or read-only folder, a program's
	// folder) is bound back in from the real one, so it stays reachable.
	Private []PrivateDir `json:"private,omitempty"`
	// Notify asks for the call's execve calls to be reported.
	Notify bool `json:"notify"`
	// FileRules are the file rules' mounts (fs.read and fs.write, decided
	// by chock per path): made after Hide, in order (shallowest first),
	// by files_linux.go. The program then runs without capabilities, so
	// a cover's mode holds against it.
	FileRules []FileRule `json:"file_rules,omitempty"`
	// Net gives the call a network namespace of its own holding only
	// loopback, brought up, with listeners at 127.0.0.1:HTTPProxyPort and
	// :SOCKSProxyPort made by the init and handed to chock (Cmd.Net):
	// nothing else routes anywhere.
	Net bool `json:"net,omitempty"`
	// NetOnly makes the network namespace and its listeners (Net) and
	// nothing else: no mounts, no Landlock, no seccomp. It is for a local
	// MCP server, which mcpconn puts in namespaces of its own (Wrap).
	NetOnly bool `json:"net_only,omitempty"`
	// Pins are the identities, taken when the session started, of the
	// Hide, ReadOnly and Exec paths that have one: the init opens each
	// path, and mounts onto (or grants execution to) what it opened only
	// when that is the same file (device and inode), never what the path
	// names now. A hidden or read-only path that is another file refuses
	// the call; an Exec path that is another file is not executable.
	Pins map[string]Inode `json:"pins,omitempty"`
	// IDs, set by Command, are the user and group the init maps to root
	// of the call's user namespace itself, first thing: chock's clone of
	// it shares chock's memory until the init is exec'd (no page tables
	// copied, however large chock's heap), so chock cannot write the
	// maps for it in between.
	IDs *IDMap `json:"ids,omitempty"`
}

// IDMap is the one user and one group outside a user namespace that its
// root is.
type IDMap struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// FileOp is what a file rule's mount does to a path.
type FileOp string

// File rule operations.
const (
	// Unreadable covers a directory with an empty read-only tmpfs that
	// the call can neither list nor enter (Keep bound back in, the
	// folders above them enterable only), every entry it had stubbed
	// with mode 000; a file with an empty file of mode 000.
	Unreadable FileOp = "unreadable"
	// ReadOnly binds the path onto itself read-only (Keep bound back in
	// writable): it can be neither written, removed nor renamed.
	ReadOnly FileOp = "read-only"
	// Pinned binds a folder onto itself: its contents stay as writable
	// as they were, but it cannot be removed or renamed away, which would
	// take the protected paths inside with it.
	Pinned FileOp = "pinned"
)

// FileRule is one path the file rules protect inside a call.
type FileRule struct {
	// Path is absolute, its symlinks resolved, and must be there.
	Path string `json:"path"`
	Op   FileOp `json:"op"`
	// Keep are paths under Path (relative, clean) that a rule lets
	// through: read from the real folder under an Unreadable cover,
	// writable under a ReadOnly one.
	Keep []string `json:"keep,omitempty"`
	// Dev and Ino are the identity Path had when the call was planned
	// (0: unchecked): a path another call moved and replaced since is
	// refused, rather than the replacement protected in its place.
	Dev uint64 `json:"dev,omitempty"`
	Ino uint64 `json:"ino,omitempty"`
}

// Inode is a file's device and inode: what a pinned path must still open.
type Inode struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// InodeAt is the device and inode of what path names (symlinks
// followed), and whether it is a directory.
func InodeAt(path string) (Inode, bool, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return Inode{}, false, err
	}
	return Inode{Dev: uint64(st.Dev), Ino: st.Ino}, st.Mode&syscall.S_IFMT == syscall.S_IFDIR, nil
}

// InodeOf is a file identity's device and inode.
func InodeOf(id FileID) Inode { return Inode{Dev: id.Dev, Ino: id.Ino} }

// PrivateDir is one of the session's temporary folders (Host) and where
// a call sees it (At).
type PrivateDir struct {
	Host string `json:"host"`
	At   string `json:"at"`
}

// SecretFile is one file-bound secret: its base name under Spec.FileDir and
// its value.
type SecretFile struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Error is a sandbox that could not be made; the call is then refused,
// never run bare.
type Error struct {
	Step string // what failed: "namespaces", "mount /proc", "landlock" …
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("the sandbox could not be made (%s): %v", e.Step, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Stale says the file system changed between the plan of the file rules
// and their mounts (a path gone, or another file in its place): the call
// may be planned again.
func (e *Error) Stale() bool { return strings.HasPrefix(e.Step, staleStep) }

// staleStep begins the step of a file rule's mount that found its path
// changed since the plan.
const staleStep = "protecting "

// ErrUnsupported is the sandbox on a system that has none.
var ErrUnsupported = errors.New("exec sandboxes need Linux (user, pid and mount namespaces and Landlock)")
