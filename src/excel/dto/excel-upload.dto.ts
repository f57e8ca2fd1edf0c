import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional } from 'class-validator';
import { booleanText } from '../../common/validation/decorators';
import { RefreshMediaQuery } from '../../media/dto/refresh-media.query';

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
export class ExcelUploadQuery extends RefreshMediaQuery {
  @ApiPropertyOptional({
    description:
      'Run the import as a background job whatever the file: the answer is 202 with the job (a file over the ' + 'synchronous limits becomes a job without it)',
    default: false,
  })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: 'async must be true or false' })
  async?: boolean;
}
