import { Injectable, Logger } from '@nestjs/common';
import type { Tenant } from '../auth/decorators';
import type { WritableField } from './goods-write';

/**
 * Told, after a catalog write has committed, the ids of the stored goods items it changed in a way
 * viewers can see (see VIEWER_VISIBLE_FIELDS; items created by the write are not included: nothing but
 * the catalog refers to them yet). Awaited by the writer before it answers; it must not throw.
 */
export type GoodsChangeHandler = (tenant: Tenant, goodsIds: number[]) => Promise<void>;

/** What a viewer's goods summary shows of an item (with its image): a change of any other field is not told. */
export const VIEWER_VISIBLE_FIELDS: ReadonlySet<WritableField> = new Set<WritableField>([
  'name',
  'brand',
  'url',
  'sku',
  'originalPrice',
  'discountedPrice',
  'discountPercentage',
]);

/** True when a write that changed these fields changed what viewers see (the image is judged apart). */
export function changesWhatViewersSee(changed: readonly WritableField[]): boolean {
  return changed.some((field) => VIEWER_VISIBLE_FIELDS.has(field));
}

/**
 * Lets other domains hear of catalog edits without the goods domain knowing them: campaigns register a
 * handler that pushes `goods.update` to the campaigns holding the changed items. The single writes
 * (GoodsService) and the batch writer (sync, spreadsheet import) call `changed` once per write, after
 * commit, with every changed id at once, so a bulk write stays one call.
 */
@Injectable()
export class GoodsChangeHooks {
  private readonly logger = new Logger(GoodsChangeHooks.name);
  private readonly handlers: GoodsChangeHandler[] = [];

  register(handler: GoodsChangeHandler): void {
    this.handlers.push(handler);
  }

  /** Runs every handler; a failing one is logged (the write itself has committed and stands). */
  async changed(tenant: Tenant, goodsIds: Iterable<number>): Promise<void> {
    const ids = [...new Set(goodsIds)];
    if (!ids.length) return;
    for (const handler of this.handlers) {
      try {
        await handler(tenant, ids);
      } catch (err) {
        this.logger.warn(`after a catalog write of customer ${tenant.id}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}
