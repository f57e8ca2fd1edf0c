import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface ReadinessReport {
  status: 'ok' | 'error';
  checks: Record<string, string>;
}

const TIMEOUT_MS = 2000;

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Readiness checks. Redis joins the list when the live channel (REDIS_URL) is configured. */
@Injectable()
export class HealthService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async readiness(): Promise<ReadinessReport> {
    const checks: Record<string, string> = {};
    try {
      await withTimeout(this.dataSource.query('SELECT 1'), 'database');
      checks.database = 'up';
    } catch (err) {
      checks.database = `down: ${err instanceof Error ? err.message : String(err)}`;
    }
    const ok = Object.values(checks).every((v) => v === 'up');
    return { status: ok ? 'ok' : 'error', checks };
  }
}
