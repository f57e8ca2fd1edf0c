import { spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * The benchmark scripts still run against the service as it is now. A bench is not a test (it times
 * things and prints figures, never failing on them), but a bench that no longer runs at all is a
 * regression nobody would see until the next measurement: a per-address cap once refused bench:fanout's
 * 1,001st viewer. Each bench here runs at a small size on SQLite and must finish, with every row and
 * every event it sent accounted for; the figures it prints are not looked at.
 */

const root = join(__dirname, '..');

function runBench(file: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', join('bench', file), ...args], {
      cwd: root,
      env: { ...process.env, REDIS_URL: '', BENCH_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('benchmark scripts run (small sizes, SQLite)', () => {
  jest.setTimeout(180_000);

  it('bench:fanout: 1,100 viewers from one address (past LIVE_SESSIONS_PER_IP) get every event', async () => {
    const { code, output } = await runBench('fanout.ts', ['--mode=single', '--viewers=1100', '--changes=2', '--batch=550']);
    expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('delivered/expected 2200/2200') });
  });

  it('bench:sync: 1,000 goods created, then updated, none failed', async () => {
    const { code, output } = await runBench('sync.ts', ['--engines=sqlite', '--count=1000', '--probe-calls=1']);
    expect(code).toBe(0);
    expect(output).toContain('(create 1000, update 0, fail 0)');
    expect(output).toContain('(create 0, update 1000, fail 0)');
  });

  it('bench:excel: a 1,000-row sheet created, then updated, none failed', async () => {
    const { code, output } = await runBench('excel.ts', ['--engines=sqlite', '--count=1000', '--probe-calls=1', '--no-job']);
    expect(code).toBe(0);
    expect(output).toContain('(create 1000, update 0, fail 0)');
    expect(output).toContain('(create 0, update 1000, fail 0)');
  });

  it('bench:export: 2,000 goods exported as .xlsx and as CSV', async () => {
    const { code, output } = await runBench('export.ts', ['--engines=sqlite', '--count=2000', '--slow-kbps=0']);
    expect(code).toBe(0);
    expect(output).toMatch(/xlsx +2000 rows/);
    expect(output).toMatch(/csv +2000 rows/);
  });
});
