import { Global, Module } from '@nestjs/common';
import { Lifecycle } from './lifecycle.service';

/** In-flight requests and the orderly shutdown (see Lifecycle). */
@Global()
@Module({ providers: [Lifecycle], exports: [Lifecycle] })
export class LifecycleModule {}
