import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvironmentVariables } from './env.validation';

/** .env.example must list every setting with its default, so that it stays the one place to look. */
describe('.env.example', () => {
  const example = readFileSync(join(__dirname, '../../.env.example'), 'utf8');
  const listed = new Map(
    example
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
  );
  const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;
  const settings = [...new Set([...Object.keys(defaults), 'REDIS_URL', 'PUBLIC_BASE_URL'])];

  it.each(settings)('lists %s', (name) => {
    expect(listed.has(name)).toBe(true);
  });

  it.each(Object.keys(defaults))('gives the default of %s', (name) => {
    expect(listed.get(name)).toBe(defaults[name] === undefined ? '' : String(defaults[name] as string | number | boolean));
  });

  it('lists nothing the service does not read', () => {
    for (const name of listed.keys()) expect(settings).toContain(name);
  });
});
