import { Module } from '@nestjs/common';
import { MediaModule } from '../media/media.module';
import { GoodsController } from './goods.controller';
import { GoodsDeletionHooks } from './goods-deletion';
import { GoodsListCache } from './goods-list-cache';
import { GoodsService } from './goods.service';

@Module({
  imports: [MediaModule],
  controllers: [GoodsController],
  providers: [GoodsService, GoodsListCache, GoodsDeletionHooks],
  exports: [GoodsService, GoodsDeletionHooks, MediaModule],
})
export class GoodsModule {}
