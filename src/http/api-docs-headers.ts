import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppConfig } from '../config/app-config';
import { publicOrigin } from './base-url';

/**
 * Security headers of the API docs (Swagger UI at /docs and its assets, /docs-json, /docs-yaml), where a
 * newcomer pastes a bearer token: no other site may frame them (frame-ancestors 'none', X-Frame-Options),
 * no content sniffing, and a Content-Security-Policy Swagger UI works under: its scripts from this origin
 * only (no inline script), its styles (the page has inline ones) and images (data: icons), and "Try it
 * out" calls to this origin and to PUBLIC_BASE_URL (the server the served document names when set).
 */
export function apiDocsPolicy(config: AppConfig): string {
  const origin = publicOrigin(config);
  const api = origin ? ` ${origin}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self'${api}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Sets the docs' security headers on every answer under the paths it is mounted on (before Swagger UI's handlers). */
export function apiDocsHeaders(config: AppConfig): RequestHandler {
  const policy = apiDocsPolicy(config);
  return (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', policy);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  };
}
