import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import type { Tenant } from '../auth/decorators';
import { SyncResponse } from './dto/sync-response.dto';
import { BatchOptions, GoodsBatchWriter } from './goods-batch-writer';

/** POST /sync: checks the envelope of the body, then hands the elements to the batch writer. */
@Injectable()
export class SyncService {
  constructor(
    private readonly writer: GoodsBatchWriter,
    private readonly config: AppConfig,
  ) {}

  async sync(tenant: Tenant, body: unknown, options: BatchOptions = {}): Promise<SyncResponse> {
    if (!Array.isArray(body)) {
      throw ApiException.invalid('The sync body must be a JSON array of goods', [{ field: 'body', message: 'must be an array' }]);
    }
    const max = this.config.limits.syncMaxItems;
    if (body.length > max) throw ApiException.tooLarge(`A sync call takes at most ${max} elements (got ${body.length})`);
    return this.writer.apply(
      tenant,
      (body as unknown[]).map((data, index) => ({ row: index + 1, data })),
      options,
    );
  }
}
