import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { CampaignGoodsModule } from './campaign-goods/campaign-goods.module';
import { CampaignLiveSourceModule, CampaignsModule } from './campaigns/campaigns.module';
import { AppConfigModule } from './config/config.module';
import { CustomersModule } from './customers/customers.module';
import { DatabaseModule } from './database/database.module';
import { ExcelModule } from './excel/excel.module';
import { GoodsModule } from './goods/goods.module';
import { HealthModule } from './health/health.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { LifecycleModule } from './lifecycle/lifecycle.module';
import { LiveModule } from './live/live.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { MediaModule } from './media/media.module';
import { PagesModule } from './pages/pages.module';
import { PublicCampaignsModule } from './public-campaigns/public-campaigns.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { RedisModule } from './redis/redis.module';
import { ENTITIES } from './schema';
import { SyncModule } from './sync/sync.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({
  imports: [
    AppConfigModule,
    LoggingModule,
    MetricsModule,
    LifecycleModule,
    DatabaseModule.forRoot(ENTITIES),
    CustomersModule,
    RedisModule,
    RateLimitModule,
    AuthModule,
    IdempotencyModule,
    GoodsModule,
    MediaModule,
    SyncModule,
    ExcelModule,
    LiveModule,
    CampaignsModule,
    CampaignLiveSourceModule,
    CampaignGoodsModule,
    PublicCampaignsModule,
    HealthModule,
    PagesModule,
    WebhooksModule,
  ],
})
export class AppModule {}
