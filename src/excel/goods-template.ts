import type * as ExcelJS from 'exceljs';
import { GOODS_COLUMNS } from './goods-sheet.columns';

export const TEMPLATE_FILENAME = 'goods-template.xlsx';
export const XLSX_CONTENT_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

export interface TemplateNotes {
  maxRows: number;
  uploadMaxBytes: number;
}

const HEADER_FILL: ExcelJS.Fill = { type: 'pattern', pattern: 'solid', fgColor: { argb: 'FFDDEBF7' } };

/**
 * The goods upload template: sheet "Goods" with the field names as header (row 1) so that a filled
 * template uploads as is, each header cell carrying a note with its Korean label and rules, one example
 * row (row 2); and sheet "Columns" explaining every column (Korean label, type, required, limits,
 * example) and how an upload is read. Only the first sheet is imported.
 */
export async function buildGoodsTemplate(notes: TemplateNotes): Promise<Buffer> {
  // Loaded on first use: exceljs costs ~30 MB of memory that a node serving no spreadsheet never needs.
  const { Workbook } = await import('exceljs');
  const workbook = new Workbook();
  workbook.creator = 'livegoods';
  workbook.created = new Date(Date.UTC(2025, 0, 1));

  const goods = workbook.addWorksheet('Goods', { views: [{ state: 'frozen', ySplit: 1 }] });
  goods.columns = GOODS_COLUMNS.map((c) => ({ header: c.field, key: c.field, width: c.width }));
  const header = goods.getRow(1);
  header.font = { bold: true };
  GOODS_COLUMNS.forEach((column, i) => {
    const cell = header.getCell(i + 1);
    cell.fill = HEADER_FILL;
    cell.note = `${column.label}\n${column.description}\nRequired: ${column.required}. ${column.limits}.`;
  });
  const example: Record<string, string | number> = {};
  for (const column of GOODS_COLUMNS) {
    // The example row uploads as is; it names no image, so an upload of the bare template fetches nothing.
    if (column.example !== '' && column.field !== 'mediaUrl') example[column.field] = column.example;
  }
  goods.addRow(example);
  for (const field of ['originalPrice', 'discountedPrice'] as const) goods.getColumn(field).numFmt = '#,##0.####';
  goods.getColumn('sku').numFmt = '@';

  const help = workbook.addWorksheet('Columns');
  help.columns = [
    { header: 'Column (header)', key: 'field', width: 20 },
    { header: '한글 라벨', key: 'label', width: 12 },
    { header: 'Type', key: 'kind', width: 10 },
    { header: 'Required', key: 'required', width: 24 },
    { header: 'Limits', key: 'limits', width: 44 },
    { header: 'Example', key: 'example', width: 36 },
    { header: 'Description', key: 'description', width: 70 },
  ];
  help.getRow(1).font = { bold: true };
  help.getRow(1).eachCell((cell) => (cell.fill = HEADER_FILL));
  for (const c of GOODS_COLUMNS) {
    help.addRow({
      field: c.field,
      label: c.label,
      kind: c.kind === 'url' ? 'URL' : c.kind === 'text' ? 'text' : c.kind === 'id' ? 'integer' : 'number',
      required: c.required,
      limits: c.limits,
      example: c.example,
      description: c.description,
    });
  }
  help.addRow([]);
  const rules = [
    'How an upload is read',
    'Only the first sheet is read. Row 1 is the header: the field names above or their Korean labels, in any order; other columns are ignored.',
    'Each following row is one goods item, applied in order like POST /sync: with an id that item is updated; else an item with the same sku, ' +
      'then the same url, is updated; else a new item is created (sku, url and name required).',
    'An empty cell leaves that field as it is (an upload never clears a field). Blank rows are skipped.',
    'Results name each row by its number in this sheet: the first goods row is row 2.',
    `At most ${notes.maxRows.toLocaleString('en-US')} goods rows and ${Math.round(notes.uploadMaxBytes / (1024 * 1024))} MB per file. ` +
      '.xlsx (Excel workbook) or CSV (UTF-8, comma, semicolon or tab separated) are accepted.',
  ];
  rules.forEach((text, i) => {
    const row = help.addRow([text]);
    if (i === 0) row.font = { bold: true };
  });

  return Buffer.from(await workbook.xlsx.writeBuffer());
}
