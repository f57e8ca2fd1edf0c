import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CustomersModule } from '../customers/customers.module';
import { AuthGuard } from './auth.guard';

/** Registers the global authentication guard (secure by default; opt out with @Public()). */
@Module({
  imports: [CustomersModule],
  providers: [{ provide: APP_GUARD, useClass: AuthGuard }],
})
export class AuthModule {}
