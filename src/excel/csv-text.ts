/**
 * Characters that make a spreadsheet program run a cell as a formula when they start it (OWASP "CSV
 * injection"): = + - @, tab and carriage return. A value needs the quote in CSV when it starts like a
 * formula, or with quotes before such a start.
 */
const NEEDS_QUOTE = /^'*[=+\-@\t\r]/;

/**
 * A text cell as written to a CSV export: a value that a spreadsheet program would run as a formula gets
 * a single quote in front (`=1+2` → `'=1+2`). A value that already starts with quotes before such a
 * start gets one more (`'=x` → `''=x`), so that the import, which takes exactly one quote off such a
 * cell (csv-rows.ts), reads back every value exactly as it was exported.
 */
export function neutralizeCsvText(text: string): string {
  // U+0000, which the API refuses but text stored before that rule may hold, becomes U+FFFD: a NUL byte
  // would make the whole file read as binary and refused on import.
  const clean = text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;
  return NEEDS_QUOTE.test(clean) ? `'${clean}` : clean;
}

/** The reverse of neutralizeCsvText, applied to every CSV cell on import. */
export function unquoteCsvText(text: string): string {
  return text.startsWith("'") && NEEDS_QUOTE.test(text.slice(1)) ? text.slice(1) : text;
}
