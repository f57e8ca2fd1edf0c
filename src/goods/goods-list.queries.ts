import { EntityManager } from 'typeorm';
import { utcDate } from '../database/column-transformers';
import { Media } from '../media/entities/media.entity';
import { Goods } from './entities/goods.entity';

/**
 * The list endpoint's queries, in plain SQL that both engines read alike (`?` placeholders, unquoted
 * identifiers). It is the hottest read path, so rows skip entity hydration and carry only the columns a
 * list item shows.
 */
const LIST_COLUMNS = 'id, name, brand, description, url, sku, originalPrice, discountedPrice, discountPercentage';

interface ListRow {
  id: number | string;
  name: string;
  brand: string | null;
  description: string | null;
  url: string;
  sku: string;
  originalPrice: number | string | null;
  discountedPrice: number | string | null;
  discountPercentage: number | string | null;
}

const decimal = (v: number | string | null): number | null => (v === null ? null : Number(v));

function toGoods(row: ListRow, customerId: number): Goods {
  return Object.assign(new Goods(), {
    id: Number(row.id),
    customerId,
    name: row.name,
    brand: row.brand,
    description: row.description,
    url: row.url,
    sku: row.sku,
    originalPrice: decimal(row.originalPrice),
    discountedPrice: decimal(row.discountedPrice),
    discountPercentage: decimal(row.discountPercentage),
  });
}

function filter(customerId: number, keyword: string): { where: string; params: unknown[] } {
  return keyword ? { where: 'customerId = ? AND INSTR(searchText, ?) > 0', params: [customerId, keyword] } : { where: 'customerId = ?', params: [customerId] };
}

export async function countMatches(em: EntityManager, customerId: number, keyword: string): Promise<number> {
  const { where, params } = filter(customerId, keyword);
  const rows: Array<{ n: number | string }> = await em.query(`SELECT COUNT(*) AS n FROM goods WHERE ${where}`, params);
  return Number(rows[0]?.n ?? 0);
}

/**
 * All matching ids, newest first, in one scan of the (customerId, searchText) covering index. (Asking
 * the database to sort would make it walk the (customerId, id) index and read every table row.)
 */
export async function matchingIds(em: EntityManager, customerId: number, keyword: string): Promise<number[]> {
  const { where, params } = filter(customerId, keyword);
  const rows: Array<{ id: number | string }> = await em.query(`SELECT id FROM goods WHERE ${where}`, params);
  return rows.map((r) => Number(r.id)).sort((a, b) => b - a);
}

/** One page, newest first, walking the (customerId, id) index. */
export async function pageOfMatches(em: EntityManager, customerId: number, keyword: string, offset: number, limit: number): Promise<Goods[]> {
  const { where, params } = filter(customerId, keyword);
  const rows: ListRow[] = await em.query(`SELECT ${LIST_COLUMNS} FROM goods WHERE ${where} ORDER BY id DESC LIMIT ? OFFSET ?`, [...params, limit, offset]);
  return rows.map((r) => toGoods(r, customerId));
}

/**
 * Up to `limit` matches with an id above `afterId`, in id order, off the (customerId, id) index: a keyset
 * page, which costs the same wherever it is in the catalog (an OFFSET would read and skip every row
 * before it). The cursor paging of the list and the export walk the catalog with it.
 */
export async function pageAfter(em: EntityManager, customerId: number, keyword: string, afterId: number, limit: number): Promise<Goods[]> {
  const rows: Array<ListRow & { mediaUrl: string | null }> = await em.query(
    `SELECT ${LIST_COLUMNS}, mediaUrl FROM goods WHERE customerId = ?${keyword ? ' AND INSTR(searchText, ?) > 0' : ''} AND id > ? ORDER BY id LIMIT ?`,
    [customerId, ...(keyword ? [keyword] : []), afterId, limit],
  );
  return rows.map((r) => Object.assign(toGoods(r, customerId), { mediaUrl: r.mediaUrl }));
}

/** The given ids, newest first. */
export async function goodsByIds(em: EntityManager, customerId: number, ids: number[]): Promise<Goods[]> {
  if (!ids.length) return [];
  const rows: ListRow[] = await em.query(
    `SELECT ${LIST_COLUMNS} FROM goods WHERE customerId = ? AND id IN (${ids.map(() => '?').join(', ')}) ORDER BY id DESC`,
    [customerId, ...ids],
  );
  return rows.map((r) => toGoods(r, customerId));
}

export async function readCatalogVersion(em: EntityManager, customerId: number): Promise<number> {
  const rows: Array<{ v: number | string }> = await em.query('SELECT catalogVersion AS v FROM customers WHERE id = ?', [customerId]);
  return Number(rows[0]?.v ?? 0);
}

interface MediaRow {
  id: number | string;
  customerId: number | string;
  goodsId: number | string;
  mediaType: string;
  originalUrl: string;
  checksum: string;
  contentType: string;
  fileKey: string;
  size: number | string;
  width: number | string;
  height: number | string;
  thumbnails: string;
  createdAt: Date | string;
  updatedAt: Date | string;
}

/** The media of a page of goods, by goods id (plain SQL: this runs on every list request). */
export async function mediaOfPage(em: EntityManager, goodsIds: number[]): Promise<Map<number, Media>> {
  const found = new Map<number, Media>();
  if (!goodsIds.length) return found;
  const rows: MediaRow[] = await em.query(
    'SELECT id, customerId, goodsId, mediaType, originalUrl, checksum, contentType, fileKey, size, width, height, thumbnails, createdAt, updatedAt ' +
      `FROM media WHERE goodsId IN (${goodsIds.map(() => '?').join(', ')})`,
    goodsIds,
  );
  for (const r of rows) {
    found.set(
      Number(r.goodsId),
      Object.assign(new Media(), {
        id: Number(r.id),
        customerId: Number(r.customerId),
        goodsId: Number(r.goodsId),
        mediaType: r.mediaType,
        originalUrl: r.originalUrl,
        checksum: r.checksum,
        contentType: r.contentType,
        fileKey: r.fileKey,
        size: Number(r.size),
        width: Number(r.width),
        height: Number(r.height),
        thumbnails: JSON.parse(r.thumbnails) as Media['thumbnails'],
        createdAt: utcDate(r.createdAt),
        updatedAt: utcDate(r.updatedAt),
      }),
    );
  }
  return found;
}
