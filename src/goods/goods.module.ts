import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LiveModule } from '../live/live.module';
import { MediaModule } from '../media/media.module';
import { Goods } from './entities/goods.entity';
import { GoodsController } from './goods.controller';
import { GoodsListCache } from './goods-list-cache';
import { GoodsService } from './goods.service';

@Module({
  imports: [TypeOrmModule.forFeature([Goods]), MediaModule, LiveModule],
  controllers: [GoodsController],
  providers: [GoodsService, GoodsListCache],
  exports: [GoodsService, TypeOrmModule, MediaModule],
})
export class GoodsModule {}
