import { MINIMAL_PARTS, xlsx, zip } from '../../test/support/sheet-fixtures';
import { ReadGuard } from './read-guard';
import { SheetError } from './sheet-error';
import { countXlsxRows } from './xlsx-row-count';

/** The quick count an import job and its upload make of an .xlsx (XML only, no values read). */

const LIMITS = { maxUncompressedBytes: 200 * 1024 * 1024 };

async function count(bytes: Buffer) {
  const guard = new ReadGuard(30_000);
  try {
    return await countXlsxRows(bytes, LIMITS, guard);
  } finally {
    guard.dispose();
  }
}

function sheetZip(sheetXml: string): Promise<Buffer> {
  return zip([
    { name: '[Content_Types].xml', data: MINIMAL_PARTS.CONTENT_TYPES },
    { name: '_rels/.rels', data: MINIMAL_PARTS.ROOT_RELS },
    { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
    { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
    { name: 'xl/worksheets/sheet1.xml', data: sheetXml },
  ]);
}

describe('countXlsxRows', () => {
  it('counts the rows below the header, and those holding values (shared and inline strings, numbers)', async () => {
    const shared = await xlsx([['sku', 'name', 'Note'], ['A', 'One'], [undefined, undefined, 'note only'], [], ['B', 2]]);
    // exceljs writes no element for an empty row: rows 2, 3 and 5 are in the file.
    expect(await count(shared)).toEqual({ valueRows: 3, rows: 3, hasLinks: false });
    const inline = await xlsx([['sku'], ['A'], ['B']], { sharedStrings: false });
    expect(await count(inline)).toEqual({ valueRows: 2, rows: 2, hasLinks: false });
  });

  it('a row element without values counts as a row, not as a row with values; rows without `r` follow the previous one', async () => {
    const bytes = await sheetZip(
      '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>' +
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c></row>' +
        '<row><c r="A2" s="1"/></row>' +
        '<row><c r="A3"><v>7</v></c></row>' +
        '</sheetData></worksheet>',
    );
    expect(await count(bytes)).toEqual({ valueRows: 1, rows: 2, hasLinks: false });
  });

  it('tells when the sheet has hyperlinks', async () => {
    const bytes = await xlsx([
      ['sku', 'url'],
      ['A', { text: 'Open', hyperlink: 'https://shop.example.com/a' }],
    ]);
    expect(await count(bytes)).toMatchObject({ valueRows: 1, hasLinks: true });
  });

  it('a malformed sheet is refused as unreadable', async () => {
    const bytes = await sheetZip('<worksheet><sheetData><row r="1"><c r="A1"><v>1</v></c></row><row></sheetData></worksheet>');
    const err = await count(bytes).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SheetError);
    expect((err as SheetError).message).toMatch(/The sheet cannot be read/);
  });
});
