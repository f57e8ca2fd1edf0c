const UNIT_SECONDS = { '': 1, s: 1, m: 60, h: 3600, d: 86400 } as const;

/**
 * A duration written as plain seconds or with a unit: `3600`, `90s`, `15m`, `12h`, `30d`.
 * Returns the seconds, or undefined when the text is not such a duration. Used by TOKEN_MAX_TTL and
 * the admin CLI's --ttl and --grace.
 */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,12})\s*([smhd]?)$/i.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNIT_SECONDS[match[2].toLowerCase() as keyof typeof UNIT_SECONDS];
}

/** Seconds as the shortest exact text with a unit: 2592000 → "30d", 5400 → "90m", 61 → "61s". */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
