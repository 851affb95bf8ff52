package action

import "strings"

// runsOthers are programs that run other programs: allowing one reaches
// everything, whatever exec.path rules deny (its hidden reach).
var runsOthers = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true, "csh": true, "tcsh": true,
	"env": true, "xargs": true, "sudo": true, "doas": true, "su": true, "nohup": true, "timeout": true,
	"nice": true, "exec": true, "busybox": true, "npx": true, "uvx": true, "pipx": true, "node": true,
	"nodejs": true, "deno": true, "bun": true, "ruby": true, "perl": true, "php": true, "lua": true,
	"pwsh": true, "powershell": true, "osascript": true, "cmd": true, "strace": true, "gdb": true,
}

// RunsOthers reports whether a program name (the first segment after
// exec.path) is a shell or interpreter.
func RunsOthers(program string) bool {
	return runsOthers[program] || strings.HasPrefix(program, "python")
}
