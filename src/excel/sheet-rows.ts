/** A cell as read from the file, before it is given a goods field's meaning. */
export interface RawCell {
  value: string | number | boolean | Date;
  /** The cell is formatted as a percentage (0.1 shows as 10%). */
  percent?: boolean;
  /** The cell holds a spreadsheet error (#N/A, #REF!, …), as its value or as its formula's result: `value` is its text. */
  error?: boolean;
}

/** One row of the sheet: its own row number and its cells by 0-based column. */
export interface RawRow {
  row: number;
  cells: Array<RawCell | undefined>;
}

/** A hyperlink of the sheet over a range of cells (rows 1-based as in the sheet, columns 0-based). */
export interface HyperlinkRange {
  top: number;
  bottom: number;
  left: number;
  right: number;
  target: string;
}

/** What a format reader streams: rows in sheet order, then (xlsx only) the sheet's hyperlinks. */
export type RawSheetEvent = { kind: 'row'; row: RawRow } | { kind: 'hyperlinks'; links: HyperlinkRange[] };

/** 0-based column index of a column name: A → 0, Z → 25, AA → 26. */
export function columnIndex(letters: string): number {
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

/** Column name of a 0-based column index: 0 → A, 26 → AA. */
export function columnName(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}
