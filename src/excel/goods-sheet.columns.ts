import { GoodsLimits } from '../goods/goods.limits';
import { withoutTrailing } from '../common/util/text';

/** The goods fields a sheet column can hold: the element fields of the JSON sync. */
export const GOODS_FIELDS = ['id', 'sku', 'url', 'name', 'brand', 'description', 'mediaUrl', 'originalPrice', 'discountedPrice', 'discountPercentage'] as const;

export type GoodsField = (typeof GOODS_FIELDS)[number];

export type FieldKind = 'id' | 'text' | 'url' | 'decimal' | 'percent';

export interface GoodsColumn {
  field: GoodsField;
  /** The Korean header label, accepted in place of the field name. */
  label: string;
  kind: FieldKind;
  /** Text for the template's explanation sheet. */
  required: string;
  limits: string;
  example: string | number;
  description: string;
  /** Column width in the template (characters). */
  width: number;
}

/** Every column of the goods template, in template order (keys first). */
export const GOODS_COLUMNS: readonly GoodsColumn[] = [
  {
    field: 'id',
    label: '상품ID',
    kind: 'id',
    required: 'no (leave empty for new goods)',
    limits: 'positive integer',
    example: '',
    description: 'Id of an existing item to update. Empty: the sku, then the url, decide.',
    width: 10,
  },
  {
    field: 'sku',
    label: '상품코드',
    kind: 'text',
    required: 'to create',
    limits: `at most ${GoodsLimits.sku} characters; unique`,
    example: 'SW-7',
    description: 'Goods code, a unique key. An existing sku updates that item.',
    width: 16,
  },
  {
    field: 'url',
    label: '상품URL',
    kind: 'url',
    required: 'to create',
    limits: `absolute http(s) URL, at most ${GoodsLimits.url} characters; unique`,
    example: 'https://shop.example.com/goods/SW-7',
    description: 'Landing-page URL, a unique key. A hyperlink cell gives its link when its text is not a URL.',
    width: 40,
  },
  {
    field: 'name',
    label: '상품명',
    kind: 'text',
    required: 'to create',
    limits: `at most ${GoodsLimits.name} characters`,
    example: '스마트 워치 7',
    description: 'Goods name.',
    width: 30,
  },
  {
    field: 'brand',
    label: '브랜드',
    kind: 'text',
    required: 'no',
    limits: `at most ${GoodsLimits.brand} characters`,
    example: 'Sampletech',
    description: 'Brand name.',
    width: 16,
  },
  {
    field: 'description',
    label: '설명',
    kind: 'text',
    required: 'no',
    limits: `at most ${GoodsLimits.description.toLocaleString('en-US')} characters`,
    example: '45 mm case, GPS',
    description: 'Free text, kept as written (line breaks included).',
    width: 40,
  },
  {
    field: 'mediaUrl',
    label: '이미지URL',
    kind: 'url',
    required: 'no',
    limits: `absolute http(s) URL, at most ${GoodsLimits.url} characters`,
    example: 'https://cdn.example.com/sw7.jpg',
    description: 'Source image; the service stores a copy and three thumbnails.',
    width: 40,
  },
  {
    field: 'originalPrice',
    label: '정가',
    kind: 'decimal',
    required: 'no',
    limits: '0 to 1,000,000,000,000; up to 4 decimals',
    example: 399000,
    description: 'List price. Numbers, numeric text and currency-formatted cells (₩399,000) are read as numbers.',
    width: 14,
  },
  {
    field: 'discountedPrice',
    label: '할인가',
    kind: 'decimal',
    required: 'no',
    limits: '0 to 1,000,000,000,000; up to 4 decimals',
    example: 359100,
    description: 'Sale price.',
    width: 14,
  },
  {
    field: 'discountPercentage',
    label: '할인율',
    kind: 'percent',
    required: 'no',
    limits: '0 to 100',
    example: 10,
    description: 'Discount in percent: 10 means 10 %. A cell formatted as a percentage (10%) is read as 10 too.',
    width: 12,
  },
];

const BY_FIELD = new Map<GoodsField, GoodsColumn>(GOODS_COLUMNS.map((c) => [c.field, c]));

export function columnOf(field: GoodsField): GoodsColumn {
  return BY_FIELD.get(field) as GoodsColumn;
}

/**
 * Header text as compared: NFKC, lower case, without spaces, underscores or hyphens, and without a
 * trailing required mark ("*") or parenthesised note ("상품명 (필수)", "price (KRW)").
 */
export function normalizeHeader(text: string): string {
  return withoutRequiredMark(withoutTrailingNote(text.normalize('NFKC').toLowerCase())).replace(/[\s_-]+/gu, '');
}

/**
 * The text without a parenthesised or bracketed note at its end (`상품명 (필수)` → `상품명`), and the
 * blanks around it: from the first `(` or `[` after the last `)` or `]` before the closing one. A scan
 * from the end, in linear time (header cells may hold 32,767 characters).
 */
function withoutTrailingNote(text: string): string {
  const end = text.trimEnd();
  const close = end.length - 1;
  if (end[close] !== ')' && end[close] !== ']') return text;
  let open = -1;
  for (let i = close - 1; i >= 0; i -= 1) {
    const c = end[i];
    if (c === ')' || c === ']') break;
    if (c === '(' || c === '[') open = i;
  }
  return open < 0 ? text : end.slice(0, open).trimEnd();
}

/** The text without the required marks (`*`) at its end, and the blanks after them. */
function withoutRequiredMark(text: string): string {
  const end = text.trimEnd();
  const unmarked = withoutTrailing(end, '*');
  return unmarked === end ? text : unmarked;
}

const ALIASES = new Map<string, GoodsField>();
for (const column of GOODS_COLUMNS) {
  ALIASES.set(normalizeHeader(column.field), column.field);
  ALIASES.set(normalizeHeader(column.label), column.field);
}

/** The field a header cell names (English field name or Korean label), if any. */
export function fieldOfHeader(text: string): GoodsField | undefined {
  return ALIASES.get(normalizeHeader(text));
}
