import type { Request } from 'express';
import { AppConfig } from '../config/app-config';

/** Absolute base for links in responses: PUBLIC_BASE_URL, else the request's scheme and host. */
export function baseUrlOf(req: Request, config: AppConfig): string {
  if (config.server.publicBaseUrl) return config.server.publicBaseUrl;
  const host = req.get('host') ?? `localhost:${config.server.port}`;
  return `${req.protocol}://${host}`;
}
