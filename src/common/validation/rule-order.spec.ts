import 'reflect-metadata';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

/** Every request DTO module of the service (the files under a `dto` folder). */
function dtoModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return dtoModules(path);
    return path.split(/[\\/]/).includes('dto') && path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

type DtoClass = (new () => object) & { name: string };

/**
 * The DTO classes and the classes they extend, with the names of their validated properties (other classes,
 * such as the settings, which report every problem at once rather than the first, are not requests).
 */
function requestDtos(): Map<DtoClass, ValidationMetadata[]> {
  const classes = new Set<unknown>();
  for (const file of dtoModules(join(__dirname, '..', '..'))) {
    for (const exported of Object.values(require(file) as Record<string, unknown>)) {
      for (let c = exported; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) classes.add(c);
    }
  }
  const storage = getMetadataStorage() as unknown as { validationMetadatas: Map<DtoClass, ValidationMetadata[]> };
  return new Map([...storage.validationMetadatas].filter(([target]) => classes.has(target)));
}

const TYPE_RULES = new Set(['isString', 'isInt', 'isNumber', 'isBoolean', 'isArray']);
const VALUE_RULES = new Set(['maxLength', 'minLength', 'matches', 'max', 'min', 'isIn', 'arrayMaxSize', 'arrayMinSize', 'arrayUnique']);

describe('request DTOs', () => {
  it('check a value’s type before its length, range or choices (a number sent for a text is told so, not that it is too long)', () => {
    const misordered: string[] = [];
    let checked = 0;
    for (const [target, metadatas] of requestDtos()) {
      const byProperty = new Map<string, string[]>();
      // A rule with `each` checks a list's elements, not the value's own type.
      for (const m of metadatas) byProperty.set(m.propertyName, [...(byProperty.get(m.propertyName) ?? []), `${m.name ?? m.type}${m.each ? '[each]' : ''}`]);
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

  it('hand null to a handler only for fields documented as nullable (null elsewhere is absent: OptionalField, or refused)', () => {
    const leaking: string[] = [];
    let checked = 0;
    for (const [target, metadatas] of requestDtos()) {
      // A query string never carries null.
      if (target.name.endsWith('Query')) continue;
      for (const property of new Set(metadatas.map((m) => m.propertyName))) {
        checked += 1;
        const dto = plainToInstance(target, { [property]: null }) as Record<string, unknown>;
        const refused = validateSync(dto, { forbidUnknownValues: false, stopAtFirstError: true }).some((e) => e.property === property);
        const docs = (Reflect.getMetadata('swagger/apiModelProperties', target.prototype, property) ?? {}) as { nullable?: boolean; oneOf?: unknown };
        const nullable = docs.nullable === true || JSON.stringify(docs.oneOf ?? []).includes('"nullable":true');
        if (!refused && dto[property] === null && !nullable) leaking.push(`${target.name}.${property}`);
      }
    }
    expect(leaking).toEqual([]);
    expect(checked).toBeGreaterThan(30);
  });
});
