import { ApiProperty } from '@nestjs/swagger';

/** The multipart/form-data body of POST /excel (documentation only: multer reads it). */
export class ExcelUploadBody {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description:
      'The spreadsheet: an .xlsx workbook (first sheet read) or a CSV file (UTF-8, name ending in .csv). ' +
      'Row 1 is the header (field names or Korean labels, any order); see GET .../excel/template.',
  })
  file: unknown;
}
