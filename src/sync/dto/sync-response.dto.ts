import { ApiExtraModels, ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { GoodsResponse } from '../../goods/dto/goods-response.dto';
import { MediaResponse } from '../../media/dto/media-response.dto';

export type RowStatus = 'CREATE' | 'UPDATE' | 'FAIL';

/** One element's outcome: the stored Goods (or, on FAIL, the submitted fields) plus row, status, message. */
export class UploadGoodsRowResult extends GoodsResponse {
  row: number;
  status: RowStatus;
  message: string | null;
}

const ROW = {
  type: 'integer',
  format: 'int32',
  example: 1,
  description: '1-based position in the JSON array (the sheet row number for a spreadsheet)',
} as const;

/** A CREATE or UPDATE row: the item as stored. (Documentation of UploadGoodsRowResult; the writer builds the rows.) */
export class SyncSavedRow extends GoodsResponse {
  @ApiProperty({
    type: 'integer',
    format: 'int64',
    nullable: true,
    example: 1024,
    description: 'Assigned by the service; null only on a CREATE row of a dry run (dryRun=true), which creates nothing',
  })
  declare id: number;
  @ApiProperty(ROW) row: number;
  @ApiProperty({ enum: ['CREATE', 'UPDATE'], example: 'CREATE', description: 'CREATE: a new item; UPDATE: an existing item changed (or sent unchanged)' })
  status: 'CREATE' | 'UPDATE';
  @ApiProperty({
    nullable: true,
    type: String,
    example: null,
    description:
      'null, or `saved without image: <reason>` when the image could not be stored; ' +
      "`image not fetched: row <n> of the same request set another mediaUrl for this item` when a later row of the call replaced this row's mediaUrl; " +
      'in a dry run, `dry run: image not fetched: <mediaUrl>` when a real call would fetch the image',
  })
  message: string | null;
}

const AS_SENT = 'The value the element sent, as sent (a string, number or boolean), or null when it sent none or sent an array or object';
/** What a FAIL row echoes: a JSON scalar as sent, or null. */
const SCALAR = {
  anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'string', nullable: true, enum: [null] }],
  description: AS_SENT,
};

/**
 * A FAIL row: every Goods field, holding what the element sent (as sent, so of any JSON type) or null,
 * `medias: []` and the customer's currency, so that a client mapping each row to Goods never trips on one.
 */
export class SyncFailedRow {
  @ApiProperty({ ...SCALAR, example: null }) id: unknown;
  @ApiProperty({ ...SCALAR, example: null }) name: unknown;
  @ApiProperty({ ...SCALAR, example: null }) brand: unknown;
  @ApiProperty({ ...SCALAR, example: null }) description: unknown;
  @ApiProperty({ ...SCALAR, example: null }) url: unknown;
  @ApiProperty({ ...SCALAR, example: 'X-1' }) sku: unknown;
  @ApiProperty({ ...SCALAR, example: null }) mediaUrl: unknown;
  @ApiProperty({ type: [MediaResponse], maxItems: 0, description: 'Always empty', example: [] }) medias: MediaResponse[];
  @ApiProperty({ ...SCALAR, example: -1 }) originalPrice: unknown;
  @ApiProperty({ ...SCALAR, example: null }) discountedPrice: unknown;
  @ApiProperty({ example: 'KRW', description: "The customer's currency (ISO 4217)" }) currency: string;
  @ApiProperty({ ...SCALAR, example: null }) discountPercentage: unknown;
  @ApiProperty(ROW) row: number;
  @ApiProperty({ enum: ['FAIL'], example: 'FAIL', description: 'The element was not applied' }) status: 'FAIL';
  @ApiProperty({ example: 'originalPrice must be at least 0', description: 'Why the element failed' }) message: string;
}

@ApiExtraModels(SyncSavedRow, SyncFailedRow)
export class SyncResponse {
  @ApiProperty({
    type: 'array',
    description: 'One row per element, in order; CREATE/UPDATE rows and FAIL rows are told apart by status',
    items: {
      oneOf: [{ $ref: getSchemaPath(SyncSavedRow) }, { $ref: getSchemaPath(SyncFailedRow) }],
      discriminator: {
        propertyName: 'status',
        mapping: { CREATE: getSchemaPath(SyncSavedRow), UPDATE: getSchemaPath(SyncSavedRow), FAIL: getSchemaPath(SyncFailedRow) },
      },
    },
  })
  results: UploadGoodsRowResult[];
  @ApiProperty({ type: 'integer', format: 'int32', example: 2, description: 'Number of elements (rows): createCount + updateCount + failCount' })
  totalCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Rows with status CREATE' }) createCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Rows with status UPDATE' }) updateCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 0, description: 'Rows with status FAIL' }) failCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}
