import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';

export interface StoredFile {
  size: number;
  stream: Readable;
}

/** A stored file as the orphan sweep sees it: its key, its size and when it was last written or reused. */
export interface ListedFile {
  key: string;
  size: number;
  modifiedMs: number;
}

/**
 * Where media files live. Keys look like `ab/abcdef…64.jpg`. The local implementation keeps them under
 * DATA_DIR/media; a shared volume works as is, an object store can implement the same calls.
 */
export abstract class MediaStorage {
  abstract put(key: string, data: Buffer): Promise<void>;
  /** Marks the file as used now (its modification time: the orphan sweep leaves recent files); false when there is none. */
  abstract touch(key: string): Promise<boolean>;
  abstract open(key: string): Promise<StoredFile | null>;
  /** The file's size and when it was last written or touched (ms since the epoch); null when there is none. */
  abstract stat(key: string): Promise<ListedFile | null>;
  abstract delete(key: string): Promise<void>;
  /** Every stored file, one folder (`ab/`) at a time, in no set order; files left half-written included. */
  abstract list(): AsyncIterable<ListedFile[]>;
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

  async touch(key: string): Promise<boolean> {
    try {
      const now = new Date();
      await utimes(this.path(key), now, now);
      return true;
    } catch {
      return false;
    }
  }

  async stat(key: string): Promise<ListedFile | null> {
    try {
      const info = await stat(this.path(key));
      return info.isFile() ? { key, size: info.size, modifiedMs: info.mtimeMs } : null;
    } catch {
      return null;
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

  async *list(): AsyncIterable<ListedFile[]> {
    let dirs: string[];
    try {
      dirs = (await readdir(this.root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      return; // nothing stored yet
    }
    for (const dir of dirs) {
      let names: string[];
      try {
        names = (await readdir(join(this.root, dir), { withFileTypes: true })).filter((d) => d.isFile()).map((d) => d.name);
      } catch {
        continue; // removed meanwhile
      }
      const files: ListedFile[] = [];
      for (const name of names) {
        const file = await this.stat(`${dir}/${name}`);
        if (file) files.push(file);
      }
      yield files;
    }
  }
}
