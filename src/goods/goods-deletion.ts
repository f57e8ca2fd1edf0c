import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';

/** What a handler wants done once the deletion has committed (e.g. push viewer events). */
export type AfterCommit = () => void;

/**
 * Work another domain must do in the same transaction as a goods deletion, before the row goes (it may
 * lock rows and write). Returns what to do after commit, if anything.
 */
export type GoodsDeletionHandler = (em: EntityManager, tenant: Tenant, goodsId: number) => Promise<AfterCommit | void>;

/**
 * Lets other domains take part in deleting a goods item without the goods domain knowing them: campaigns
 * register a handler that locks the campaigns holding the item and records their new goods list, inside
 * the deleting transaction; the goods domain runs the handlers and, after commit, what they returned.
 */
@Injectable()
export class GoodsDeletionHooks {
  private readonly handlers: GoodsDeletionHandler[] = [];

  register(handler: GoodsDeletionHandler): void {
    this.handlers.push(handler);
  }

  /** Runs every handler in the caller's transaction; returns their after-commit work. */
  async run(em: EntityManager, tenant: Tenant, goodsId: number): Promise<AfterCommit[]> {
    const after: AfterCommit[] = [];
    for (const handler of this.handlers) {
      const done = await handler(em, tenant, goodsId);
      if (done) after.push(done);
    }
    return after;
  }
}
