import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional } from 'class-validator';
import { booleanRefusal, booleanText } from '../../common/validation/decorators';
import { BatchQuery } from '../../sync/dto/batch-query.dto';

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

/** The query of POST /excel. */
export class ExcelUploadQuery extends BatchQuery {
  @ApiPropertyOptional({
    description:
      'Run the import as a background job (up to 100 MB and 200,000 data rows): the answer is 202 with the job. ' +
      'Without it the file is imported at once (200) and a file over 20 MB or 10,000 data rows is refused with 413',
    default: false,
  })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: booleanRefusal('async') })
  async?: boolean;
}
