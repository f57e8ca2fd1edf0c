/**
 * Date inputs of the API (campaign `scheduledAt`/`scheduledEndAt`, the public list's `from`/`to`):
 * epoch milliseconds (a number or numeric text) or an ISO-8601 date-time, read strictly.
 *
 * - Epoch milliseconds are whole numbers in [0, MAX_EPOCH_MS]: 1970-01-01T00:00:00.000Z to
 *   9999-12-31T23:59:59.999Z, which both engines store and read back unchanged (MySQL's DATETIME stops
 *   at year 9999; larger values used to fail there and come back altered from SQLite).
 * - ISO-8601 is the extended format `YYYY-MM-DD`, optionally followed by `THH:MM`, `:SS` and a
 *   fraction, then `Z` or an offset `±HH:MM` (`+` may be a space: a query string's unencoded `+`). The calendar is checked (month 01-12, the days of that
 *   month, 29 February only in leap years, hour 00-23, minute and second 00-59): `2026-02-30` is
 *   refused, never rolled over to 2 March as `new Date()` would. A date or date-time without offset is
 *   UTC. Digits of the fraction beyond milliseconds are dropped.
 */

/** 9999-12-31T23:59:59.999Z, the last instant a date field takes. */
export const MAX_EPOCH_MS = 253_402_300_799_999;

export type DateInput = { ok: true; date: Date } | { ok: false; reason: string };

// The offset may follow the time after a space instead of `+`: an unencoded `+` in a query string
// (`from=2026-03-01T20:00:00+09:00`) reaches the service as a space, and nothing else can be meant.
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2}| \d{2}:\d{2})?)?$/;
const RANGE = 'between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z';

const fail = (reason: string): DateInput => ({ ok: false, reason });

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
}

function fromEpochMs(ms: number): DateInput {
  if (Number.isNaN(ms)) return fail('expected epoch milliseconds or an ISO-8601 date-time');
  if (ms < 0 || ms > MAX_EPOCH_MS) return fail(`epoch milliseconds must be ${RANGE} (0 to ${MAX_EPOCH_MS})`);
  if (!Number.isInteger(ms)) return fail('epoch milliseconds must be a whole number');
  return { ok: true, date: new Date(ms) };
}

function fromIso(text: string): DateInput | undefined {
  const m = ISO_DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', offset = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12) return fail(`month ${mo} does not exist`);
  if (day < 1 || day > daysInMonth(year, month)) return fail(`${y}-${mo} has no day ${d}`);
  if (hour > 23) return fail(`hour ${h} does not exist (00-23)`);
  if (minute > 59) return fail(`minute ${mi} does not exist (00-59)`);
  if (second > 59) return fail(`second ${s} does not exist (00-59)`);
  let offsetMinutes = 0;
  if (offset !== 'Z') {
    const oh = Number(offset.slice(1, 3));
    const om = Number(offset.slice(4, 6));
    if (oh > 23 || om > 59) return fail(`offset ${offset.replace(' ', '+')} does not exist`);
    offsetMinutes = (offset[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // Date.UTC would read years 0-99 as 1900-1999; setUTCFullYear takes the year as written.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, '0')));
  const ms = date.getTime() - offsetMinutes * 60_000;
  if (ms < 0 || ms > MAX_EPOCH_MS) return fail(`the date-time must be ${RANGE}`);
  return { ok: true, date: new Date(ms) };
}

/** Reads a date input strictly: the instant, or why the value is not one. */
export function parseDateInput(value: unknown): DateInput {
  if (value instanceof Date) return fromEpochMs(value.getTime());
  if (typeof value === 'number') return fromEpochMs(value);
  if (typeof value !== 'string') return fail('expected epoch milliseconds or an ISO-8601 date-time');
  const text = value.trim();
  if (/^\d+$/.test(text)) return fromEpochMs(Number(text));
  return fromIso(text) ?? fail('expected epoch milliseconds or an ISO-8601 date-time such as 2026-03-01T20:00:00+09:00');
}

/** class-transformer step: a valid input becomes a Date; anything else stays as sent for the validator to refuse. */
export function toDate({ value }: { value: unknown }): unknown {
  if (value === null || value === undefined) return value;
  const parsed = parseDateInput(value);
  return parsed.ok ? parsed.date : value;
}
