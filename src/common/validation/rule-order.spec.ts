import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

/** Every request DTO module of the service (the files under a `dto` folder). */
function dtoModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return dtoModules(path);
    return path.split(/[\\/]/).includes('dto') && path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

const TYPE_RULES = new Set(['isString', 'isInt', 'isNumber', 'isBoolean', 'isArray']);
const VALUE_RULES = new Set(['maxLength', 'minLength', 'matches', 'max', 'min', 'isIn', 'arrayMaxSize', 'arrayMinSize', 'arrayUnique']);

describe('request DTOs', () => {
  it('check a value’s type before its length, range or choices (a number sent for a text is told so, not that it is too long)', () => {
    // The DTO classes and the classes they extend (other classes, such as the settings, which report every
    // problem at once rather than the first, are not request bodies).
    const classes = new Set<unknown>();
    for (const file of dtoModules(join(__dirname, '..', '..'))) {
      for (const exported of Object.values(require(file) as Record<string, unknown>)) {
        for (let c = exported; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) classes.add(c);
      }
    }
    const storage = getMetadataStorage() as unknown as { validationMetadatas: Map<{ name: string }, ValidationMetadata[]> };
    const misordered: string[] = [];
    let checked = 0;
    for (const [target, metadatas] of storage.validationMetadatas) {
      if (!classes.has(target)) continue;
      const byProperty = new Map<string, string[]>();
      for (const m of metadatas) byProperty.set(m.propertyName, [...(byProperty.get(m.propertyName) ?? []), m.name ?? m.type]);
      for (const [property, rules] of byProperty) {
        const type = rules.findIndex((r) => TYPE_RULES.has(r));
        const value = rules.findIndex((r) => VALUE_RULES.has(r));
        if (type < 0 || value < 0) continue;
        checked += 1;
        if (value < type) misordered.push(`${target.name}.${property}: ${rules.join(', ')}`);
      }
    }
    expect(misordered).toEqual([]);
    expect(checked).toBeGreaterThan(20);
  });
});
