import { CsvRecordWidth } from './csv-rows';
import { SheetError } from './sheet-error';
import { MAX_COLUMNS } from './xlsx-xml-guard';

/** The CSV through a record-width check in slices of `size` bytes. */
function check(csv: string, size = 7, delimiter = ','): void {
  const width = new CsvRecordWidth(delimiter);
  const bytes = Buffer.from(csv);
  for (let i = 0; i < bytes.length; i += size) width.check(bytes.subarray(i, i + size));
}

describe('CsvRecordWidth', () => {
  it(`takes records of up to ${MAX_COLUMNS} cells, and delimiters inside quoted cells (with "" and line breaks) as text`, () => {
    expect(() => check(`sku,name\r\n${','.repeat(MAX_COLUMNS - 1)}\n`)).not.toThrow();
    expect(() => check(`sku,name\n"${','.repeat(MAX_COLUMNS * 2)}""\n,",x\n`, 3)).not.toThrow();
    expect(() => check(`sku;name\n${';'.repeat(MAX_COLUMNS - 1)}\n`, 64, ';')).not.toThrow();
  });

  it(`refuses (413) the first record of more than ${MAX_COLUMNS} cells, naming its row, whatever the slicing`, () => {
    for (const size of [1, 256, 1 << 20]) {
      let err: unknown;
      try {
        check(`sku,name\r\n"a\nb",x\n\n${','.repeat(1_000_000)}\n`, size);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SheetError);
      expect({ refusal: (err as SheetError).refusal, message: (err as SheetError).message }).toEqual({
        refusal: 'TOO_LARGE',
        message: 'Row 4 of the CSV file has more than 16,384 cells, the most columns (A to XFD) a spreadsheet has; refused',
      });
    }
  });
});
