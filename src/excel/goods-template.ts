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
 * The goods upload template: sheet "Goods" with the field names as header (row 1) and no rows, so that
 * the template uploads as is (and, unchanged, imports nothing), each header cell carrying a note with its
 * Korean label and rules; sheet "Example" with the same header and one filled-in row; and sheet "Columns"
 * explaining every column (Korean label, type, required, limits, example) and how an upload is read. Only
 * the first sheet is imported, so the example never becomes data.
 */
export async function buildGoodsTemplate(notes: TemplateNotes): Promise<Buffer> {
  // Already loaded when the service started (ExcelService.onModuleInit); imported here too so that this
  // module stands on its own (the sheet worker, the unit specs).
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
  for (const field of ['originalPrice', 'discountedPrice'] as const) goods.getColumn(field).numFmt = '#,##0.####';
  goods.getColumn('sku').numFmt = '@';

  // The example lives on a sheet of its own: uploading the template unchanged must import nothing.
  const sample = workbook.addWorksheet('Example');
  sample.columns = GOODS_COLUMNS.map((c) => ({ header: c.field, key: c.field, width: c.width }));
  sample.getRow(1).font = { bold: true };
  sample.getRow(1).eachCell((cell) => (cell.fill = HEADER_FILL));
  const example: Record<string, string | number> = {};
  for (const column of GOODS_COLUMNS) if (column.example !== '') example[column.field] = column.example;
  sample.addRow(example);
  for (const field of ['originalPrice', 'discountedPrice'] as const) sample.getColumn(field).numFmt = '#,##0.####';

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
    'Only the first sheet ("Goods") is read; the sheet "Example" shows a filled-in row and is never imported. ' +
      'Row 1 is the header: the field names above or their Korean labels, in any order; other columns are ignored.',
    'Each following row is one goods item, applied in order like POST /sync: with an id that item is updated; else an item with the same sku, ' +
      'then the same url, is updated; else a new item is created (sku, url and name required).',
    `An empty cell leaves that field as it is (an upload never clears a field). Blank rows are skipped (at most ${notes.maxRows.toLocaleString('en-US')} of them).`,
    'Results name each row by its number in this sheet: the first goods row is row 2.',
    `At most ${notes.maxRows.toLocaleString('en-US')} goods rows and ${Math.round(notes.uploadMaxBytes / (1024 * 1024))} MB per file ` +
      '(a larger file is refused unless uploaded with async=true, as a background import job). ' +
      '.xlsx (Excel workbook) or CSV (UTF-8, comma, semicolon or tab separated) are accepted.',
  ];
  rules.forEach((text, i) => {
    const row = help.addRow([text]);
    if (i === 0) row.font = { bold: true };
  });

  return Buffer.from(await workbook.xlsx.writeBuffer());
}
