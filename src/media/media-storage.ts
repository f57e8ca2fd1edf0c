import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';

export interface StoredFile {
  size: number;
  stream: Readable;
}

/**
 * Where media files live. Keys look like `ab/abcdef…64.jpg`. The local implementation keeps them under
 * DATA_DIR/media; a shared volume works as is, an object store can implement the same four calls.
 */
export abstract class MediaStorage {
  abstract put(key: string, data: Buffer): Promise<void>;
  abstract exists(key: string): Promise<boolean>;
  abstract open(key: string): Promise<StoredFile | null>;
  abstract delete(key: string): Promise<void>;
}

export class LocalMediaStorage extends MediaStorage {
  constructor(private readonly root: string) {
    super();
  }

  private path(key: string): string {
    const path = resolve(this.root, key);
    if (!path.startsWith(this.root + sep)) throw new Error(`invalid media key ${key}`);
    return path;
  }

  async put(key: string, data: Buffer): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    // Write then rename: a reader never sees half a file, and two writers of one key both succeed.
    const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(tmp, data);
    await rename(tmp, path);
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.path(key))).isFile();
    } catch {
      return false;
    }
  }

  async open(key: string): Promise<StoredFile | null> {
    try {
      const path = this.path(key);
      const info = await stat(path);
      if (!info.isFile()) return null;
      return { size: info.size, stream: createReadStream(path) };
    } catch {
      return null;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }
}
