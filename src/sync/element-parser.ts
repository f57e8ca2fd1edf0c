import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { flattenValidationErrors } from '../common/errors/validation';
import { GoodsWrite, SyncGoodsElementDto } from '../goods/dto/goods-body.dto';
import { WRITABLE_FIELDS } from '../goods/goods-write';

/** One element to apply: its row number in the caller's numbering and the raw submitted value. */
export interface BatchElement {
  row: number;
  data: unknown;
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
  const data = element.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return { row: element.row, echo: {}, error: 'element must be a JSON object' };
  }
  // Only the goods fields are read (unknown ones are ignored), and each must be a plain value: a nested
  // array or object is refused here, so validation never walks (possibly huge) nested input.
  const echo: Record<string, unknown> = {};
  let nested: string | undefined;
  for (const key of ECHOED) {
    const value = (data as Record<string, unknown>)[key];
    if (value === undefined) continue;
    if (value !== null && typeof value === 'object') nested ??= key;
    else echo[key] = value;
  }
  if (nested) {
    const type = nested === 'id' || nested.endsWith('Price') || nested === 'discountPercentage' ? 'a number' : 'a string';
    return { row: element.row, echo, error: `${nested} must be ${type}` };
  }
  const dto = plainToInstance(SyncGoodsElementDto, echo);
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
  if (dto.id === undefined && dto.sku === undefined && dto.url === undefined) {
    return { row: element.row, echo, error: 'one of id, sku or url is required to match or create an item' };
  }
  return { row: element.row, write: dto, echo };
}
