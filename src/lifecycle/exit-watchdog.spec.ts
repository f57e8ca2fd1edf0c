import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

/** Runs `body` in a node process of its own with startExitWatchdog imported; returns how it ended. */
function run(body: string) {
  const script = `const { startExitWatchdog } = require('./src/lifecycle/exit-watchdog');\n${body}`;
  return spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json') },
  });
}

describe('startExitWatchdog', () => {
  it('kills a process whose event loop never yields again, after writing one line saying so', () => {
    // The main thread spins for good (as a library looping on a broken connection did): no timer of its own can fire.
    const ended = run(`startExitWatchdog(300, 'json'); const until = Date.now() + 30000; while (Date.now() < until) {} console.log('not killed');`);
    expect(ended.signal).toBe('SIGKILL');
    expect(ended.stdout).not.toContain('not killed');
    const line = JSON.parse(ended.stdout.trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'fatal', context: 'Shutdown', msg: expect.stringContaining('did not end within 300 ms') });
  }, 60_000);

  it('writes the line as text in the text format', () => {
    const ended = run(`startExitWatchdog(300, 'text'); const until = Date.now() + 30000; while (Date.now() < until) {}`);
    expect(ended.signal).toBe('SIGKILL');
    expect(ended.stdout).toMatch(/FATAL \(Shutdown\): the shutdown did not end within 300 ms/);
  }, 60_000);

  it('does nothing once terminated, and does not keep the process alive', () => {
    const ended = run(`const w = startExitWatchdog(300, 'json'); w.terminate().then(() => setTimeout(() => console.log('alive'), 800));`);
    expect([ended.status, ended.signal, ended.stdout.trim()]).toEqual([0, null, 'alive']);
    const idle = run(`startExitWatchdog(60000, 'json'); console.log('done');`);
    expect([idle.status, idle.signal, idle.stdout.trim()]).toEqual([0, null, 'done']);
  }, 60_000);
});
