import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { AppConfigModule } from './config/config.module';
import { CustomersModule } from './customers/customers.module';
import { DatabaseModule } from './database/database.module';
import { GoodsModule } from './goods/goods.module';
import { HealthModule } from './health/health.module';
import { MediaModule } from './media/media.module';
import { SyncModule } from './sync/sync.module';

@Module({
  imports: [AppConfigModule, DatabaseModule, CustomersModule, AuthModule, GoodsModule, MediaModule, SyncModule, HealthModule],
})
export class AppModule {}
