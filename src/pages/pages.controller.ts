import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { PageFiles } from './page-files';
import { publicOrigin } from '../http/base-url';

/** HTML: always revalidated (ETag), so a new version shows at the next load. */
const PAGE_CACHE = 'no-cache';
/** Scripts and styles: five minutes, then revalidated (their names carry no version). */
const ASSET_CACHE = 'public, max-age=300';

const KEY = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The operator page (/console) and the viewer page (/watch/{accessKey}/{campaignKey}), plain HTML + CSS +
 * JS from public/, and their assets under /assets/. No token is needed to load them: the console asks
 * the operator for an access key and a token and sends it with each API call.
 */
@ApiExcludeController()
@Public()
@Controller()
export class PagesController {
  constructor(
    private readonly files: PageFiles,
    private readonly config: AppConfig,
  ) {}

  @Get('console')
  console(@Req() req: Request, @Res() res: Response): void {
    this.send(res, 'console/index.html', PAGE_CACHE, this.policy(req, "'none'"));
  }

  @Get('watch/:accessKey/:campaignKey')
  watch(@Param('accessKey') accessKey: string, @Param('campaignKey') campaignKey: string, @Req() req: Request, @Res() res: Response): void {
    // The viewer page may be embedded in an integrator's player (no frame-ancestors limit).
    // An address no broadcast can have is a 404 a viewer can read: an HTML page, not the API's JSON.
    if (!KEY.test(accessKey) || !KEY.test(campaignKey)) this.send(res, 'watch/not-found.html', 'no-store', this.policy(req, null), 404);
    else this.send(res, 'watch/index.html', PAGE_CACHE, this.policy(req, null));
  }

  @Get('assets/*path')
  asset(@Param('path') raw: string | string[], @Req() req: Request, @Res() res: Response): void {
    const rel = Array.isArray(raw) ? raw.join('/') : raw;
    this.send(res, rel, ASSET_CACHE, this.policy(req, "'none'"));
  }

  /**
   * Content-Security-Policy: scripts, styles, fonts and fetches only from this origin (no inline code),
   * the Socket.IO connection to this host, images from here (and from PUBLIC_BASE_URL, where media
   * links point).
   */
  private policy(req: Request, frameAncestors: string | null): string {
    const host = (req.get('host') ?? '').replace(/[^A-Za-z0-9.:[\]-]/g, '');
    const sockets = host ? ` ws://${host} wss://${host}` : '';
    const origin = publicOrigin(this.config);
    const media = origin ? ` ${origin}` : '';
    return [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      `img-src 'self' data:${media}`,
      `connect-src 'self'${sockets}`,
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      ...(frameAncestors ? [`frame-ancestors ${frameAncestors}`] : []),
    ].join('; ');
  }

  private send(res: Response, rel: string, cache: string, csp: string, status = 200): void {
    const path = this.files.resolve(rel);
    if (!path) throw ApiException.notFound(`No page file ${rel}`);
    res.status(status);
    res.setHeader('Cache-Control', cache);
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.sendFile(path, { cacheControl: false, dotfiles: 'deny' }, (err?: Error) => {
      if (!err || res.headersSent) return;
      res.status(404).json({ _s: -404, _e: `No page file ${rel}` });
    });
  }
}
