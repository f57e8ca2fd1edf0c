import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { flattenValidationErrors } from '../common/errors/validation';
import { isHttpUrl, NUMERIC_TEXT } from '../common/validation/decorators';
import { GoodsWrite, SyncGoodsElementDto } from '../goods/dto/goods-body.dto';
import { WRITABLE_FIELDS } from '../goods/goods-write';
import { GoodsLimits, PRICE_SCALE } from '../goods/goods.limits';
import { decimalInput } from '../common/util/decimal';

/** One element to apply: its row number in the caller's numbering and the raw submitted value. */
export interface BatchElement {
  row: number;
  data: unknown;
  /** Set when the element's source already refuses it (a spreadsheet cell holding an error): a FAIL row with this message. */
  refusal?: string;
}

/** An element read: the write to apply, or why it fails; `echo` is what a FAIL row shows of it. */
export interface ParsedElement {
  row: number;
  write?: GoodsWrite;
  echo: Record<string, unknown>;
  error?: string;
}

/** What a FAIL row echoes of the submitted element. */
const ECHOED = ['id', ...WRITABLE_FIELDS] as const;

/**
 * Reads and validates one sync or spreadsheet element (a pure function of the element: it also runs in
 * the validation worker, element-worker.ts).
 */
export function parseElement(element: BatchElement): ParsedElement {
  return shortEcho(readElement(element));
}

function readElement(element: BatchElement): ParsedElement {
  const data = element.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return { row: element.row, echo: {}, error: 'element must be a JSON object' };
  }
  // Only the goods fields are read (unknown ones are ignored), and each must be a plain value: a nested
  // array or object is refused here, so validation never walks (possibly huge) nested input.
  const echo: Record<string, unknown> = {};
  let nested: string | undefined;
  // A FAIL row sent back (fixed) shows null for every field its element did not send: there null is
  // "not sent", not "clear", or sending it back would wipe the item's brand, prices and image.
  const failRow = (data as Record<string, unknown>).status === 'FAIL';
  for (const key of ECHOED) {
    const value = (data as Record<string, unknown>)[key];
    if (value === undefined || (value === null && failRow)) continue;
    if (value !== null && typeof value === 'object') nested ??= key;
    else echo[key] = value;
  }
  if (element.refusal) return { row: element.row, echo, error: element.refusal };
  if (nested) {
    const type = nested === 'id' || nested.endsWith('Price') || nested === 'discountPercentage' ? 'a number' : 'a string';
    return { row: element.row, echo, error: `${nested} must be ${type}` };
  }
  let dto = plainlyValid(echo);
  if (!dto) {
    dto = plainToInstance(SyncGoodsElementDto, echo);
    const errors = validateSync(dto, { whitelist: true, forbidUnknownValues: false, stopAtFirstError: true });
    if (errors.length) {
      return {
        row: element.row,
        echo,
        error: flattenValidationErrors(errors)
          .map((e) => e.message)
          .join('; '),
      };
    }
  }
  if (dto.id === undefined && dto.sku === undefined && dto.url === undefined) {
    return { row: element.row, echo, error: 'one of id, sku or url is required to match or create an item' };
  }
  return { row: element.row, write: dto, echo };
}

/** Characters a FAIL row shows of a text longer than its field takes. */
export const ECHO_CUT_CHARS = 256;

/**
 * A FAIL row echoes the values as sent, but a text longer than its field takes (a 150 MB spreadsheet cell
 * made a 150 MB answer) is shown cut to its first ECHO_CUT_CHARS characters and an ellipsis, which the
 * message says. A FAIL row thus never carries more than the fields' limits and a few hundred characters.
 */
function shortEcho(parsed: ParsedElement): ParsedElement {
  if (parsed.write) return parsed;
  let notes: string[] | undefined;
  let echo = parsed.echo;
  for (const [key, value] of Object.entries(parsed.echo)) {
    if (typeof value !== 'string') continue;
    const rule = Object.hasOwn(PLAIN_RULES, key) ? PLAIN_RULES[key] : undefined;
    const max = rule && rule.kind !== 'number' && rule.kind !== 'id' ? Math.max(rule.max, ECHO_CUT_CHARS) : ECHO_CUT_CHARS;
    if (value.length <= max) continue;
    if (echo === parsed.echo) echo = { ...parsed.echo };
    echo[key] = `${value.slice(0, ECHO_CUT_CHARS)}…`;
    (notes ??= []).push(`${key} is shown cut to its first ${ECHO_CUT_CHARS} of ${value.length.toLocaleString('en-US')} characters`);
  }
  if (!notes) return parsed;
  return { ...parsed, echo, error: `${parsed.error ?? 'invalid element'} (${notes.join('; ')})` };
}

/**
 * The rules of SyncGoodsElementDto's fields (goods-body.dto.ts and the field decorators), for the
 * common case only: see plainlyValid.
 */
const PLAIN_RULES: Record<string, { kind: 'text' | 'longText' | 'url' | 'number' | 'id'; nullable: boolean; min?: number; max: number }> = {
  name: { kind: 'text', nullable: false, max: GoodsLimits.name },
  brand: { kind: 'text', nullable: true, max: GoodsLimits.brand },
  description: { kind: 'longText', nullable: true, max: GoodsLimits.description },
  url: { kind: 'url', nullable: false, max: GoodsLimits.url },
  sku: { kind: 'text', nullable: false, max: GoodsLimits.sku },
  mediaUrl: { kind: 'url', nullable: true, max: GoodsLimits.url },
  originalPrice: { kind: 'number', nullable: true, min: 0, max: GoodsLimits.maxPrice },
  discountedPrice: { kind: 'number', nullable: true, min: 0, max: GoodsLimits.maxPrice },
  discountPercentage: { kind: 'number', nullable: true, min: 0, max: 100 },
  id: { kind: 'id', nullable: false, min: 1, max: Number.MAX_SAFE_INTEGER },
};

const REFUSED = Symbol('refused');

/**
 * The element as class-transformer and class-validator would accept it, for an element whose every field
 * plainly passes (the common case), without their generic machinery: it costs ~25 µs per element, most
 * of the validation of a large import. Anything this is not sure of (any rule broken, text with UTF-16
 * surrogates or variation selectors, whose length the length rules count differently) is undefined and
 * goes through the library as before, which also writes the messages. element-parser.spec.ts checks
 * that both give the same write for thousands of generated elements.
 */
export function plainlyValid(echo: Record<string, unknown>): SyncGoodsElementDto | undefined {
  const values: Record<string, unknown> = {};
  for (const key of Object.keys(echo)) {
    if (!Object.hasOwn(PLAIN_RULES, key)) return undefined;
    const rule = PLAIN_RULES[key];
    const value = plainValue(rule, echo[key]);
    if (value === REFUSED) return undefined;
    values[key] = value;
  }
  return Object.assign(new SyncGoodsElementDto(), values);
}

function plainValue(rule: (typeof PLAIN_RULES)[string], value: unknown): unknown {
  // null clears a field that may be cleared; for one that cannot (id, name, sku, url) it is the same as
  // leaving it out, as in every goods body: a FAIL row, which shows such fields as null, goes back as it is.
  if (value === null) return rule.nullable ? null : undefined;
  // Blank text clears a field that may be cleared, as the field decorators read it (free text is kept as sent).
  if (rule.nullable && rule.kind !== 'longText' && typeof value === 'string' && value.trim() === '') return null;
  if (rule.kind === 'number' || rule.kind === 'id') {
    const n = rule.kind === 'number' ? decimalInput(value, PRICE_SCALE) : typeof value === 'string' && NUMERIC_TEXT.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < (rule.min as number) || n > rule.max) return REFUSED;
    return rule.kind === 'id' && !Number.isInteger(n) ? REFUSED : n;
  }
  if (typeof value !== 'string') return REFUSED;
  // Free text is kept as sent; the others are trimmed first.
  const text = rule.kind === 'longText' ? value : value.trim();
  if (text.length > rule.max || !plainText(text)) return REFUSED;
  if (rule.kind === 'text' && text.length === 0) return REFUSED;
  if (rule.kind === 'url' && !isHttpUrl(text)) return REFUSED;
  return text;
}

/**
 * Text without UTF-16 surrogates, variation selectors or U+0000: well-formed, as long as the length rules
 * count it, and what WellFormedText accepts.
 */
function plainText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || (c >= 0xd800 && (c <= 0xdfff || c === 0xfe0e || c === 0xfe0f))) return false;
  }
  return true;
}
