/** Why an upload is refused as a whole (nothing of it is written). */
export enum SheetRefusal {
  /** Not a readable .xlsx or .csv: wrong type, empty, corrupt, truncated, no workbook, too slow to read. */
  Unsupported = 'UNSUPPORTED',
  /** Over a limit: data rows, decompressed size, strings in the workbook. */
  TooLarge = 'TOO_LARGE',
  /** A readable spreadsheet that is not in the template's shape: no header row, no key column, a column twice. */
  BadLayout = 'BAD_LAYOUT',
}

/** Thrown by the sheet parser; the service maps the refusal to the API's error code. */
export class SheetError extends Error {
  constructor(
    readonly refusal: SheetRefusal,
    message: string,
    /** Refused only for its number of data rows (an import job may take it). */
    readonly tooManyRows = false,
  ) {
    super(message);
    this.name = 'SheetError';
  }

  static unsupported(message: string): SheetError {
    return new SheetError(SheetRefusal.Unsupported, message);
  }

  static tooLarge(message: string): SheetError {
    return new SheetError(SheetRefusal.TooLarge, message);
  }

  static tooManyRows(message: string): SheetError {
    return new SheetError(SheetRefusal.TooLarge, message, true);
  }

  static badLayout(message: string): SheetError {
    return new SheetError(SheetRefusal.BadLayout, message);
  }
}
