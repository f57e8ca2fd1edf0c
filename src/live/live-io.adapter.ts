import { INestApplicationContext, Logger } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { createAdapter } from '@socket.io/redis-adapter';
import type Redis from 'ioredis';
import type { Server, ServerOptions } from 'socket.io';
import type { RedisConfig } from '../config/app-config';
import { RedisConnection } from '../redis/redis.module';

/**
 * Socket.IO server settings for the viewer channel; with REDIS_URL, the Redis adapter (its channels
 * under REDIS_PREFIX), so that an event published on any node reaches the viewers of every node.
 */
export class LiveIoAdapter extends IoAdapter {
  private readonly logger = new Logger('LiveIoAdapter');
  private readonly clients: Redis[] = [];

  constructor(
    app: INestApplicationContext,
    private readonly redis: RedisConfig,
  ) {
    super(app);
  }

  override createIOServer(port: number, options?: ServerOptions): Server {
    const server: Server = super.createIOServer(port, {
      ...options,
      maxHttpBufferSize: 64 * 1024,
      pingInterval: 25_000,
      pingTimeout: 20_000,
      perMessageDeflate: false,
    } as ServerOptions);
    if (this.redis.url) {
      const pub = RedisConnection.open(this.redis.url, this.logger);
      const sub = pub.duplicate();
      this.clients.push(pub, sub);
      server.adapter(createAdapter(pub, sub, { key: `${this.redis.prefix}:socket.io` }));
    }
    return server;
  }

  override async close(server: Server): Promise<void> {
    await super.close(server);
    await Promise.all(this.clients.splice(0).map((c) => c.quit().catch(() => undefined)));
  }
}
