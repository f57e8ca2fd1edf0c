import { existsSync, readdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { Injectable, Logger } from '@nestjs/common';

/** Where the static pages live: `public/` at the project root (beside src/ and dist/, and in the image at /app/public). */
export function findPublicDir(from: string = __dirname): string | null {
  // src/pages (ts-node, jest) and dist/pages (npm start, Docker) are both two levels below the root.
  const candidates = [resolve(from, '..', '..', 'public'), resolve(from, '..', '..', '..', 'public'), resolve(process.cwd(), 'public')];
  return candidates.find((dir) => existsSync(join(dir, 'console', 'index.html'))) ?? null;
}

/** File names that may be served: lower-case words, dashes, dots, one extension, in folders. */
const SAFE_PATH = /^(?:[a-z0-9][a-z0-9_-]*\/)*[a-z0-9][a-z0-9._-]*\.(?:html|js|css|svg|png|ico|json|webmanifest|map)$/;

/**
 * The files under public/, indexed once at start: only a file found in the index is ever sent, so a
 * request path cannot reach anything else (no traversal, no dot files).
 */
@Injectable()
export class PageFiles {
  private readonly logger = new Logger('Pages');
  readonly root: string | null;
  private readonly files = new Map<string, string>();

  constructor() {
    this.root = findPublicDir();
    if (!this.root) {
      this.logger.warn('public/ not found: the /console and /watch pages are not available');
      return;
    }
    this.index(this.root);
  }

  private index(dir: string): void {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        this.index(path);
        continue;
      }
      const rel = relative(this.root as string, path)
        .split(sep)
        .join('/');
      if (entry.isFile() && SAFE_PATH.test(rel)) this.files.set(rel, path);
    }
  }

  /** The absolute path of a public file by its path relative to public/ (e.g. `console/console.js`), or null. */
  resolve(rel: string): string | null {
    return SAFE_PATH.test(rel) ? (this.files.get(rel) ?? null) : null;
  }
}
