/**
 * About how many bytes structured-cloning `value` copies (a postMessage to or from a worker thread):
 * each string by its length, each key too, 8 for any other value. Cloning is synchronous, on the sending
 * thread and again on the receiving one (about 20 ms per MB on a 2-core VM, with the garbage it leaves),
 * so messages are kept to a bounded size by it: a batch of 500 spreadsheet rows of two 32,000-character
 * cells each (32 MB) held the main thread 0.8-1.4 s.
 */
export function cloneSize(value: unknown): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const item = stack.pop();
    if (typeof item === 'string') size += item.length;
    else if (item !== null && typeof item === 'object') {
      if (Array.isArray(item)) for (const child of item) stack.push(child);
      else
        for (const [key, child] of Object.entries(item)) {
          size += key.length;
          stack.push(child);
        }
    } else size += 8;
  }
  return size;
}

/** `items` in runs of consecutive items, each run's cloneSize at most `maxBytes` (or one item alone, when it is bigger). */
export function groupsByCloneSize<T>(items: T[], maxBytes: number): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = cloneSize(item);
    if (group.length && bytes + size > maxBytes) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(item);
    bytes += size;
  }
  if (group.length) groups.push(group);
  return groups;
}
