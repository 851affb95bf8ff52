// The sandbox runtime's library path, as Claude Code uses it: one
// SandboxManager, initialized once; for each line read on stdin, the
// command /bin/true wrapped with wrapWithSandbox, spawned through a shell
// and waited for, then "done" (or "fail ...") written back. Run by
// BenchmarkSandboxExec with the module's folder as argv[2].
import { createInterface } from 'node:readline';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const mod = await import(pathToFileURL(path.join(process.argv[2], 'dist', 'index.js')).href);
const { SandboxManager } = mod;
await SandboxManager.initialize({
  network: { allowedDomains: [], deniedDomains: [] },
  filesystem: { denyRead: [], allowWrite: [process.cwd()], denyWrite: [] },
});
const rl = createInterface({ input: process.stdin });
for await (const _ of rl) {
  try {
    const cmd = await SandboxManager.wrapWithSandbox('/bin/true');
    const code = await new Promise((resolve, reject) => {
      const p = spawn(cmd, { shell: true, stdio: 'ignore' });
      p.on('exit', resolve);
      p.on('error', reject);
    });
    SandboxManager.cleanupAfterCommand?.();
    process.stdout.write(code === 0 ? 'done\n' : `fail exit ${code}\n`);
  } catch (e) {
    process.stdout.write(`fail ${String(e).replace(/\n/g, ' ')}\n`);
  }
}
await SandboxManager.reset?.();
