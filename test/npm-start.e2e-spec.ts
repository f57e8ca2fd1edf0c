import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { processAlive } from './support/process-alive';

const ROOT = resolve(__dirname, '..');

/**
 * `npm start` as a supervisor runs it: the supervisor signals npm's own process, not its children. npm
 * passes SIGTERM on to the script's process; the script must be the service itself (not a shell that
 * dies and leaves the service running, orphaned and still holding its port).
 */
describe('npm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'livegoods-npm-start-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('SIGTERM to npm reaches the service: it shuts down (no service left running)', async () => {
    // The project's start script, with a stand-in for the service that notes its pid and the SIGTERM it gets.
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const standIn = join(dir, 'service.js');
    writeFileSync(
      standIn,
      `require('fs').writeFileSync(${JSON.stringify(join(dir, 'pid'))}, String(process.pid));
       process.on('SIGTERM', () => { require('fs').writeFileSync(${JSON.stringify(join(dir, 'sigterm'))}, 'yes'); process.exit(0); });
       setInterval(() => undefined, 1000);`,
    );
    expect(scripts.start).toContain('dist/main.js');
    const start = scripts.start.replace('dist/main.js', JSON.stringify(standIn));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'npm-start-check', version: '1.0.0', private: true, scripts: { start } }));
    writeFileSync(join(dir, '.npmrc'), readFileSync(join(ROOT, '.npmrc')));
    const npm = spawn(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['start'], { cwd: dir, stdio: 'ignore' });
    const deadline = Date.now() + 30_000;
    while (!existsSync(join(dir, 'pid')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const service = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    try {
      const exited = new Promise<void>((done) => npm.once('exit', () => done()));
      npm.kill('SIGTERM');
      await exited;
      const gone = Date.now() + 10_000;
      while (processAlive(service) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
      expect({ serviceRunning: processAlive(service), gotSigterm: existsSync(join(dir, 'sigterm')) }).toEqual({ serviceRunning: false, gotSigterm: true });
    } finally {
      if (processAlive(service)) process.kill(service, 'SIGKILL');
    }
  }, 60_000);
});
