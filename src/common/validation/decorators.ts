import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsDefined,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  registerDecorator,
  ValidateBy,
  ValidationArguments,
} from 'class-validator';
import { MAX_EPOCH_MS, parseDateInput, toDate } from './dates';
import { DECIMAL_TEXT, decimalInput } from '../util/decimal';

/** Whether a field may be absent, and whether `null` (meaning "clear it") is allowed. */
export interface Presence {
  required?: boolean;
  nullable?: boolean;
}

const trim = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

const TRUE_TEXT = new Set(['true', '1', 'yes', 'on', 'y']);
const FALSE_TEXT = new Set(['false', '0', 'no', 'off', 'n']);

/**
 * The spellings of a boolean in query strings and form fields, as form handlers read them: true, 1, yes,
 * on (y) and false, 0, no, off (n), in any case, and in JSON also the numbers 1 and 0; an empty value is
 * absent (the default applies). Anything else is left to the validators to refuse.
 */
export const booleanText = Transform(({ value }: { value: unknown }) => booleanOfText(value));

/**
 * A value as booleanText reads it: true or false for their spellings (and the JSON numbers 1 and 0, as the
 * message refusing other values names them), undefined for empty text, else the value as it is.
 */
export function booleanOfText(value: unknown): unknown {
  if (value === 1 || value === 0) return value === 1;
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (v === '') return undefined;
  if (TRUE_TEXT.has(v)) return true;
  if (FALSE_TEXT.has(v)) return false;
  return value;
}

/** The value as the client sent it, for messages: `'abc'`, `12.5`, `["a","b"]` (cut at 60 characters). */
export function sent(value: unknown): string {
  const text = typeof value === 'string' ? `'${value}'` : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** The message refusing a value a boolean field cannot read: the spellings it takes, and the value sent. */
export function booleanRefusal(property: string): (args: ValidationArguments) => string {
  return (args) => `${property} must be true or false (also 1/0, yes/no, on/off); got ${sent(args.value)}`;
}

/** A boolean field (query, form or JSON), see booleanText; the message names the value sent. */
export function BooleanField(property: string, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(booleanText, ...presence(p, property), IsBoolean({ message: booleanRefusal(property) }), docs(p, { type: Boolean, ...options }));
}

/** Text that numeric fields read as a number ("19.99", " 12 "). */
export const NUMERIC_TEXT = /^\s*-?(?:\d+(?:\.\d*)?|\.\d+)\s*$/;
/** The JSON null as a `oneOf` branch (OpenAPI 3.0 has no `type: 'null'`). */
const NULL_BRANCH = { type: 'string', nullable: true, enum: [null], description: 'null clears the value' };

/**
 * `null` for a field that cannot be cleared means the same as leaving the field out (typed clients send
 * null for every field they do not set, and clients echo whole answers back): it keeps the stored value,
 * takes the default, or is "required" when the field must be given.
 */
const nullIsAbsent = Transform(({ value }: { value: unknown }) => (value === null ? undefined : value));

/**
 * Blank text (empty, or only white space) for a field that may be cleared is the same as null: it clears
 * the stored value (a brand or an image URL sent as "" means there is none).
 */
const blankIsNull = Transform(({ value }: { value: unknown }) => (typeof value === 'string' && value.trim() === '' ? null : value));

/**
 * An optional body field that cannot be cleared: absent or null skips its rules, and null reaches the
 * handler as absent (nullIsAbsent), never as a null the handler does not expect. A bare IsOptional() lets
 * null through to the handler.
 */
export function OptionalField(): PropertyDecorator {
  return applyDecorators(nullIsAbsent, IsOptional());
}

function presence({ required, nullable }: Presence, property: string): PropertyDecorator[] {
  if (required) return [nullIsAbsent, IsDefined({ message: `${property} is required` })];
  // Absent or null skips; null reaches the handler only for nullable fields (it then clears the stored value).
  return nullable ? [IsOptional()] : [OptionalField()];
}

/** presence(), with blank text read as null when the field may be cleared (blankIsNull). */
function presenceBlankIsNull(p: Presence, property: string): PropertyDecorator[] {
  return p.nullable ? [blankIsNull, ...presence(p, property)] : presence(p, property);
}

function docs(p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  // A oneOf carries null as a branch of its own (a `nullable` beside a oneOf has no type to extend).
  const nullable = 'oneOf' in options ? {} : { nullable: !!p.nullable };
  return ApiProperty({ ...options, required: !!p.required, ...nullable } as ApiPropertyOptions);
}

/**
 * Text must be well-formed Unicode (String.prototype.isWellFormed): a lone UTF-16 surrogate (JSON
 * `"\ud800"`) would be answered back as sent but stored as U+FFFD by the database, so the stored value
 * would differ from the one acknowledged. Nor may it hold U+0000 (JSON `"\u0000"`): no catalog text means
 * it, C-based tools cut text there, and a CSV export holding it would not import again (a NUL byte marks
 * a binary file). `each` checks every element of an array.
 */
export function WellFormedText(property: string, each = false): PropertyDecorator {
  const wellFormed = (value: unknown) => typeof value !== 'string' || (value.isWellFormed() && !value.includes('\0'));
  return (target, key) =>
    registerDecorator({
      name: 'isWellFormedText',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => (each && Array.isArray(value) ? value.every(wellFormed) : wellFormed(value)),
        defaultMessage: (args?: ValidationArguments) => {
          const values: unknown[] = each && Array.isArray(args?.value) ? args.value : [args?.value];
          const nul = values.some((v) => typeof v === 'string' && v.includes('\0'));
          return `${args?.property ?? property} must be well-formed Unicode text (it contains ${nul ? 'the NUL character U+0000' : 'a lone UTF-16 surrogate'})`;
        },
      },
    });
}

/** Schemes a browser would run or open locally if the text were used as a link. */
const DANGEROUS_SCHEME = /^(javascript|vbscript|data|file|blob):/i;

/**
 * Whether a free text (a stream URL or id) would be a dangerous link: `javascript:`, `vbscript:`,
 * `data:`, `file:` or `blob:`, in any case, also behind leading blanks or control characters and with
 * tabs or line breaks inside (browsers strip those from URLs before reading the scheme).
 */
export function isDangerousLink(value: string): boolean {
  const text = value.replace(/[\t\n\r]/g, '');
  let start = 0;
  while (start < text.length && isBlankOrControl(text, start)) start += 1;
  return DANGEROUS_SCHEME.test(text.slice(start));
}

/** C0 and C1 controls, the space, Unicode white space and the zero-width space. */
function isBlankOrControl(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code <= 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x200b || /\s/.test(text[index]);
}

/** Refuses a free text that would be a dangerous link (see isDangerousLink); anything else passes. */
export function SafeLinkText(property: string): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name: 'isSafeLinkText',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !isDangerousLink(value),
        defaultMessage: (args?: ValidationArguments) => `${args?.property ?? property} must not be a javascript:, vbscript:, data:, file: or blob: link`,
      },
    });
}

/**
 * The checks of a text of at most `max` characters (at least `min`, when given), type first: a value that is
 * not text is told so, naming it, rather than that it is too long. Validators only (presence and
 * documentation are the field's own). class-validator checks a property's rules in the order they were
 * registered, and stacked decorators register from the bottom up, so a bare `@IsString() @MaxLength(n)`
 * would check the length first.
 */
export function TextRules(property: string, max: number, min = 0): PropertyDecorator {
  return applyDecorators(
    IsString({ message: (args: ValidationArguments) => `${property} must be a string; got ${sent(args.value)}` }),
    ...(min > 0 ? [MinLength(min, { message: `${property} must not be empty` })] : []),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    WellFormedText(property),
  );
}

/** A trimmed string of 1 to `max` characters; blank text is refused, or is null where the field may be cleared. */
export function TextField(property: string, max: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    trim,
    ...presenceBlankIsNull(p, property),
    IsString({ message: `${property} must be a string` }),
    MinLength(1, { message: `${property} must not be empty` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    WellFormedText(property),
    docs(p, { type: String, maxLength: max, ...options }),
  );
}

/** A free text that may be long and is kept as sent (no trimming). */
export function LongTextField(property: string, max: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    ...presence(p, property),
    IsString({ message: `${property} must be a string` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    WellFormedText(property),
    docs(p, { type: String, maxLength: max, ...options }),
  );
}

export function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.length > 0;
  } catch {
    return false;
  }
}

/** An absolute http(s) URL of at most `max` characters. */
export function HttpUrlField(property: string, max: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  const isHttp: PropertyDecorator = (target, key) =>
    registerDecorator({
      name: 'isHttpUrl',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => isHttpUrl(value),
        defaultMessage: (args?: ValidationArguments) => `${args?.property ?? property} must be an absolute http or https URL`,
      },
    });
  return applyDecorators(
    trim,
    ...presenceBlankIsNull(p, property),
    IsString({ message: `${property} must be a string` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    WellFormedText(property),
    isHttp,
    docs(p, { type: String, maxLength: max, format: 'uri', ...options }),
  );
}

/**
 * A decimal number in [min, max] with `scale` fractional digits kept: numeric text accepted, rounded on
 * its decimal digits before the limits are checked (decimalInput).
 */
export function DecimalField(property: string, min: number, max: number, scale: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => decimalInput(value, scale)),
    ...presenceBlankIsNull(p, property),
    IsNumber({ allowNaN: false, allowInfinity: false }, { message: `${property} must be a number` }),
    Min(min, { message: `${property} must be at least ${min}` }),
    Max(max, { message: `${property} must be at most ${max}` }),
    docs(p, {
      description: `A number from ${min} to ${max}, rounded to ${scale} decimals; numeric text ("19.99", "1E+12") is read as the number`,
      ...options,
      oneOf: [
        { type: 'number', minimum: min, maximum: max },
        { type: 'string', pattern: DECIMAL_TEXT.source, description: 'numeric text' },
        ...(p.nullable ? [NULL_BRANCH] : []),
      ],
    }),
  );
}

/** Whole-number text, blanks around it allowed: an id sent as text. */
const ID_TEXT = /^\s*\d+\s*$/;
/** How the OpenAPI document describes an id a client sends: a number or that text. */
const ID_SCHEMAS = [
  { type: 'integer', format: 'int64', minimum: 1 },
  { type: 'string', pattern: ID_TEXT.source, description: 'the id as text' },
];

/**
 * An id sent as text becomes a number, as numeric fields read text ("15", " 15 ", "15."); whole-number text
 * beyond what this service gives (2^53 - 1, the largest whole number JSON readers keep exactly) stays text,
 * for the message to name as sent rather than as the float it would become.
 */
function idOfText(value: unknown): unknown {
  if (typeof value !== 'string' || !NUMERIC_TEXT.test(value)) return value;
  const n = Number(value);
  return !Number.isSafeInteger(n) && ID_TEXT.test(value) ? value.trim() : n;
}

/** Whether `value` (after idOfText) is a positive id. */
function isPositiveId(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

/**
 * Why an id sent as digits beyond the ids this service gives is refused, naming it as sent; undefined for
 * any other value. (Such digits stay text when read, not the float they would become.)
 */
export function idTooLarge(name: string, value: unknown): string | undefined {
  return typeof value === 'string' && /^\d+$/.test(value) ? `${name} is too large: ids go up to ${Number.MAX_SAFE_INTEGER}; got ${sent(value)}` : undefined;
}

/** Why `value` (after idOfText) is not a positive id, naming `name` and the value sent. */
function idRefusal(name: string, value: unknown): string {
  const tooLarge = idTooLarge(name, value);
  if (tooLarge) return tooLarge;
  if (typeof value === 'number' && Number.isInteger(value) && value > Number.MAX_SAFE_INTEGER) {
    return `${name} is too large: ids go up to ${Number.MAX_SAFE_INTEGER} (send larger ones as text to have them named exactly)`;
  }
  return `${name} must be a positive integer; got ${sent(value)}`;
}

/** A positive int64 id (numeric text accepted); messages name the value sent. */
export function IdField(property: string, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => idOfText(value)),
    ...presence(p, property),
    ValidateBy({
      name: 'isPositiveId',
      validator: { validate: isPositiveId, defaultMessage: (args?: ValidationArguments) => idRefusal(property, args?.value) },
    }),
    docs(p, {
      ...options,
      oneOf: ID_SCHEMAS,
    }),
  );
}

/**
 * A required list of `minItems` to `maxItems` positive int64 ids, each a number or numeric text (as the
 * service gives ids in some answers: CampaignGoods' `goodsId` is text). The message names the first
 * element refused, by its index, and what was sent there.
 */
/** The first element of a list that repeats an earlier one: its index and the earlier one's; undefined when none does. */
function firstRepeat(list: unknown[]): { at: number; first: number } | undefined {
  const seen = new Map<string, number>();
  for (let at = 0; at < list.length; at += 1) {
    const key = String(list[at]);
    const first = seen.get(key);
    if (first !== undefined) return { at, first };
    seen.set(key, at);
  }
  return undefined;
}

/**
 * A list of ids (each a number or numeric text), of minItems to maxItems of them; with `unique`, an id
 * listed twice is refused, naming both places (a list that means an order cannot hold one item twice).
 */
export function IdListField(property: string, minItems: number, maxItems: number, p: Presence, options: ApiPropertyOptions, unique = false): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (Array.isArray(value) ? value.map(idOfText) : value)),
    ...presence(p, property),
    ValidateBy({
      name: 'isIdList',
      validator: {
        validate: (value: unknown) =>
          Array.isArray(value) &&
          value.length >= minItems &&
          value.length <= maxItems &&
          (value as unknown[]).every(isPositiveId) &&
          !(unique && firstRepeat(value)),
        defaultMessage: (args?: ValidationArguments) => {
          const value: unknown = args?.value;
          if (!Array.isArray(value)) return `${property} must be an array of ids; got ${sent(value)}`;
          if (value.length < minItems) return `${property} must hold at least ${minItems} id${minItems === 1 ? '' : 's'}`;
          if (value.length > maxItems)
            return `${property} must hold at most ${maxItems.toLocaleString('en-US')} ids; got ${value.length.toLocaleString('en-US')}`;
          const at = value.findIndex((v) => !isPositiveId(v));
          if (at >= 0) return idRefusal(`${property}[${at}]`, value[at]);
          const repeat = firstRepeat(value) ?? { at: 0, first: 0 };
          return `${property}[${repeat.at}] repeats ${property}[${repeat.first}] (${String(value[repeat.at])}); list each id once`;
        },
      },
    }),
    docs(p, {
      ...options,
      type: 'array',
      minItems,
      maxItems,
      ...(unique ? { uniqueItems: true } : {}),
      items: {
        oneOf: ID_SCHEMAS,
      },
    } as ApiPropertyOptions),
  );
}

/**
 * An optional integer query parameter (its default is applied by the handler's DTO). An empty value is
 * absent. With `clamp`, a value above `max` is served as `max` instead of being refused (paging sizes:
 * clients expect a larger value to be served, not refused). Messages name the value sent.
 */
export function IntQuery(property: string, min: number, max: number, options: ApiPropertyOptions, { clamp = false } = {}): PropertyDecorator {
  const toInt = Transform(({ value }: { value: unknown }) => {
    if (typeof value === 'string' && value.trim() === '') return options.default as number | undefined;
    const n = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
    return clamp && typeof n === 'number' && n > max ? max : n;
  });
  const clampNote = clamp ? `; values above ${max} are served as ${max}` : '';
  return applyDecorators(
    toInt,
    IsOptional(),
    IsInt({ message: (args: ValidationArguments) => `${property} must be an integer; got ${sent(args.value)}` }),
    Min(min, { message: (args: ValidationArguments) => `${property} must be at least ${min}; got ${sent(args.value)}` }),
    Max(max, { message: (args: ValidationArguments) => `${property} must be at most ${max}; got ${sent(args.value)}` }),
    ApiProperty({
      type: 'integer',
      format: 'int32',
      minimum: min,
      ...(clamp ? {} : { maximum: max }),
      required: false,
      ...options,
      description: `${options.description ?? ''}${options.description ? ' ' : ''}(an empty value is the default${clampNote})`,
    } as ApiPropertyOptions),
  );
}

/**
 * An instant given as epoch milliseconds or an ISO-8601 date-time (see dates.ts for the exact rules);
 * the handler receives a Date. Out of range or not a calendar date-time is 400 -510 naming the field.
 */
export function DateField(property: string, p: Presence, options: ApiPropertyOptions, { emptyIsAbsent = false } = {}): PropertyDecorator {
  const isDateInput: PropertyDecorator = (target, key) =>
    registerDecorator({
      name: 'isDateInput',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => value instanceof Date && parseDateInput(value).ok,
        defaultMessage: (args?: ValidationArguments) => {
          const parsed = parseDateInput(args?.value);
          const reason = parsed.ok ? 'expected epoch milliseconds or an ISO-8601 date-time' : parsed.reason;
          return `${args?.property ?? property} must be epoch milliseconds or an ISO-8601 date-time: ${reason}`;
        },
      },
    });
  const nullable = !!p.nullable;
  // A query parameter given empty (`from=`) is not given, as for every other query parameter.
  const read = emptyIsAbsent ? ({ value }: { value: unknown }) => (typeof value === 'string' && value.trim() === '' ? undefined : toDate({ value })) : toDate;
  return applyDecorators(
    Transform(read),
    ...presence(p, property),
    isDateInput,
    ApiProperty({
      required: !!p.required,
      description:
        'Epoch milliseconds (0 to 253402300799999), or an ISO-8601 date or date-time in the extended format, optionally with Z or ±hh:mm (no offset = UTC)',
      ...options,
      oneOf: dateInputSchemas(nullable),
    } as ApiPropertyOptions),
  );
}

/** Numeric text, or an ISO-8601 date or date-time in the extended format (dates.ts checks the calendar). */
export const DATE_TEXT_PATTERN = '^\\s*(\\d+|\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2}| \\d{2}:\\d{2})?)?)\\s*$';

/**
 * The documented forms of a date input: epoch milliseconds as an integer, or text (numeric, or ISO-8601:
 * a pattern rather than `format: date-time`, which would refuse `2026-03-01` and `2026-03-01T20:00`,
 * both accepted); with `nullable`, also null.
 */
export function dateInputSchemas(nullable = false, { emptyIsAbsent = false } = {}): Record<string, unknown>[] {
  return [
    { type: 'integer', format: 'int64', minimum: 0, maximum: MAX_EPOCH_MS, example: 1898593200000, description: 'epoch milliseconds' },
    {
      type: 'string',
      pattern: DATE_TEXT_PATTERN,
      example: '2030-03-01T20:00:00+09:00',
      description: 'ISO-8601 date or date-time, or epoch milliseconds as text',
    },
    ...(nullable ? [NULL_BRANCH] : []),
    ...(emptyIsAbsent ? [{ type: 'string', enum: [''], description: 'empty: not given' }] : []),
  ];
}
