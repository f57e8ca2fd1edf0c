import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');

/**
 * The fault proxy the outage specs put between the service and MariaDB or Redis. A socket it left open
 * would keep the whole test run from ending: Node spins at exit waiting for it (jest then never exits).
 */
describe('the test harness TCP proxy', () => {
  it('a link cut while its side is shutting down is closed, and the process exits by itself', async () => {
    const result = await new Promise<{ code: number | string | null; stdout: string; stderr: string }>((done) =>
      execFile(
        process.execPath,
        ['-r', 'ts-node/register/transpile-only', 'test/support/tcp-proxy-exit.ts', '20'],
        { cwd: ROOT, timeout: 60_000, killSignal: 'SIGKILL' },
        (err, stdout, stderr) => done({ code: err ? (err.killed ? 'killed: it did not exit within 60 s' : (err.code ?? null)) : 0, stdout, stderr }),
      ),
    );
    expect(result).toMatchObject({ code: 0, stdout: `${JSON.stringify({ resetErrors: 0 })}\n` });
  }, 90_000);
});
