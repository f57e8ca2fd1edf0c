import { Module } from '@nestjs/common';
import { GoodsModule } from '../goods/goods.module';
import { ElementValidator } from './element-validator';
import { GoodsBatchWriter } from './goods-batch-writer';
import { SyncController } from './sync.controller';
import { SyncService } from './sync.service';

@Module({
  imports: [GoodsModule],
  controllers: [SyncController],
  providers: [SyncService, GoodsBatchWriter, ElementValidator],
  exports: [GoodsBatchWriter],
})
export class SyncModule {}
