import { Module } from '@nestjs/common';
import { MediaModule } from '../media/media.module';
import { GoodsController } from './goods.controller';
import { GoodsChangeHooks } from './goods-changes';
import { GoodsDeletionHooks } from './goods-deletion';
import { GoodsListCache } from './goods-list-cache';
import { GoodsSearchCorpus } from './goods-search-corpus';
import { GoodsService } from './goods.service';

@Module({
  imports: [MediaModule],
  controllers: [GoodsController],
  providers: [GoodsService, GoodsListCache, GoodsSearchCorpus, GoodsDeletionHooks, GoodsChangeHooks],
  exports: [GoodsService, GoodsSearchCorpus, GoodsDeletionHooks, GoodsChangeHooks, MediaModule],
})
export class GoodsModule {}
