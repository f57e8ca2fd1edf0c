import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { GoodsResponse } from '../../goods/dto/goods-response.dto';

export type RowStatus = 'CREATE' | 'UPDATE' | 'FAIL';

/** One element's outcome: the stored Goods (or, on FAIL, the submitted fields) plus row, status, message. */
export class UploadGoodsRowResult extends GoodsResponse {
  @ApiProperty({ example: 1, description: '1-based position in the JSON array (the sheet row number for a spreadsheet)' })
  row: number;
  @ApiProperty({ enum: ['CREATE', 'UPDATE', 'FAIL'], example: 'CREATE' })
  status: RowStatus;
  @ApiPropertyOptional({ nullable: true, type: String, example: null, description: 'null on success; the reason on FAIL' })
  message: string | null;
}

export class SyncResponse {
  @ApiProperty({ type: [UploadGoodsRowResult] }) results: UploadGoodsRowResult[];
  @ApiProperty({ example: 1 }) totalCount: number;
  @ApiProperty({ example: 1 }) createCount: number;
  @ApiProperty({ example: 0 }) updateCount: number;
  @ApiProperty({ example: 0 }) failCount: number;
  @ApiProperty({ example: 0 }) _s: number;
}
