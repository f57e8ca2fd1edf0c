/** What a write does to an item's image, given the mediaUrl the item ends up with. */
export type MediaPlan = { action: 'keep' } | { action: 'remove' } | { action: 'fetch'; url: string };

/**
 * - no mediaUrl: remove the stored media (if any);
 * - the URL of the stored media, unchanged: keep it, no fetch (unless `refresh`);
 * - anything else (a new URL, or a URL whose earlier fetch failed): fetch.
 */
export function planMedia(finalUrl: string | null | undefined, storedFrom: string | null, refresh: boolean): MediaPlan {
  if (!finalUrl) return storedFrom === null ? { action: 'keep' } : { action: 'remove' };
  if (finalUrl === storedFrom && !refresh) return { action: 'keep' };
  return { action: 'fetch', url: finalUrl };
}
