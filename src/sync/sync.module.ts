import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module';
import { GoodsBatchWriter } from './goods-batch-writer';
import { SyncController } from './sync.controller';
import { SyncService } from './sync.service';

@Module({
  imports: [GoodsModule],
  controllers: [SyncController],
  providers: [SyncService, GoodsBatchWriter],
  exports: [GoodsBatchWriter],
})
export class SyncModule {}
