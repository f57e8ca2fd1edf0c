import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { CampaignsModule } from './campaigns/campaigns.module';
import { AppConfigModule } from './config/config.module';
import { CustomersModule } from './customers/customers.module';
import { DatabaseModule } from './database/database.module';
import { ExcelModule } from './excel/excel.module';
import { GoodsModule } from './goods/goods.module';
import { HealthModule } from './health/health.module';
import { LiveModule } from './live/live.module';
import { MediaModule } from './media/media.module';
import { PagesModule } from './pages/pages.module';
import { PublicCampaignsModule } from './public-campaigns/public-campaigns.module';
import { RedisModule } from './redis/redis.module';
import { SyncModule } from './sync/sync.module';

@Module({
  imports: [AppConfigModule, DatabaseModule, CustomersModule, AuthModule, GoodsModule, MediaModule, SyncModule, ExcelModule, RedisModule, LiveModule, CampaignsModule, PublicCampaignsModule, HealthModule, PagesModule],
})
export class AppModule {}
