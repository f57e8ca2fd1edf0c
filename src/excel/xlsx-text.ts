/**
 * Characters an .xlsx cell cannot hold as they are: XML drops the C0 controls (and exceljs drops them
 * and DEL when writing), and XML reading turns a carriage return into a line feed. OOXML writes them as
 * `_xHHHH_` escapes (as Excel does), and a literal `_xHHHH_` text as `_x005F_xHHHH_`.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNWRITABLE = /[\x00-\x08\x0B-\x0D\x0E-\x1F\x7F]/g;
const ESCAPE = /_x([0-9A-F]{4})_/g;

/** A text as written to an .xlsx string cell of the export (see above), read back exactly by decodeXlsxText. */
export function encodeXlsxText(text: string): string {
  return text
    .replace(ESCAPE, (match) => `_x005F_${match.slice(1)}`)
    .replace(UNWRITABLE, (ch) => `_x${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`);
}

/**
 * The `_xHHHH_` escapes of an .xlsx string cell decoded (exceljs decodes them in shared strings only; a
 * shared string holding a literal escape text is thus decoded twice, a case no real sheet has).
 */
export function decodeXlsxText(text: string): string {
  return text.includes('_x') ? text.replace(ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : text;
}
