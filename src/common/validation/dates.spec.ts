import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { CreateCampaignDto } from '../../campaigns/dto/campaign-requests.dto';
import { PublicCampaignListQuery } from '../../public-campaigns/dto/public-campaigns.query';
import { MAX_EPOCH_MS, parseDateInput, toDate } from './dates';

const ms = (value: unknown): number => {
  const parsed = parseDateInput(value);
  if (!parsed.ok) throw new Error(`refused ${JSON.stringify(value)}: ${parsed.reason}`);
  return parsed.date.getTime();
};
const reason = (value: unknown): string => {
  const parsed = parseDateInput(value);
  if (parsed.ok) throw new Error(`accepted ${JSON.stringify(value)} as ${parsed.date.toISOString()}`);
  return parsed.reason;
};

describe('parseDateInput', () => {
  it('takes epoch milliseconds as a number or numeric text, from 0 to 9999-12-31T23:59:59.999Z', () => {
    expect(MAX_EPOCH_MS).toBe(Date.UTC(9999, 11, 31, 23, 59, 59, 999));
    expect(ms(0)).toBe(0);
    expect(ms(1763712000000)).toBe(1763712000000);
    expect(ms('1763712000000')).toBe(1763712000000);
    expect(ms(' 1763712000000 ')).toBe(1763712000000);
    expect(ms(MAX_EPOCH_MS)).toBe(MAX_EPOCH_MS);
    expect(ms(String(MAX_EPOCH_MS))).toBe(MAX_EPOCH_MS);
  });

  it.each([[MAX_EPOCH_MS + 1], [999999999999999], ['999999999999999'], ['12345678901234567890'], [-1], [1e308], [Infinity], [-Infinity]])(
    'refuses %p as out of range',
    (value) => {
      expect(reason(value)).toMatch(/between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z/);
    },
  );

  it('refuses fractional milliseconds and NaN', () => {
    expect(reason(1763712000000.5)).toMatch(/whole number/);
    expect(reason(NaN)).toMatch(/epoch milliseconds or an ISO-8601/);
    expect(reason(new Date(NaN))).toMatch(/epoch milliseconds or an ISO-8601/);
  });

  it.each([
    ['2026-03-01', Date.UTC(2026, 2, 1)],
    ['2026-03-01T20:00', Date.UTC(2026, 2, 1, 20)],
    ['2026-03-01T20:00:15', Date.UTC(2026, 2, 1, 20, 0, 15)],
    ['2026-03-01T20:00:15Z', Date.UTC(2026, 2, 1, 20, 0, 15)],
    ['2026-03-01T20:00:15.5Z', Date.UTC(2026, 2, 1, 20, 0, 15, 500)],
    ['2026-03-01T20:00:15.123456789Z', Date.UTC(2026, 2, 1, 20, 0, 15, 123)],
    ['2026-03-01T20:00:15+09:00', Date.UTC(2026, 2, 1, 11, 0, 15)],
    ['2026-03-01T20:00-05:30', Date.UTC(2026, 2, 2, 1, 30)],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['2000-02-29', Date.UTC(2000, 1, 29)],
    ['1970-01-01T00:00:00.000Z', 0],
    ['1970-01-01T09:00:00+09:00', 0],
    ['9999-12-31T23:59:59.999Z', MAX_EPOCH_MS],
    [' 2026-03-01T20:00:00Z ', Date.UTC(2026, 2, 1, 20)],
    // A query string's unencoded `+` arrives as a space.
    ['2026-03-01T20:00:15 09:00', Date.UTC(2026, 2, 1, 11, 0, 15)],
    ['2026-03-01T20:00 05:30', Date.UTC(2026, 2, 1, 14, 30)],
  ])('reads ISO-8601 %p (no offset = UTC)', (text, expected) => {
    expect(ms(text)).toBe(expected);
  });

  it.each([
    ['2026-02-30', /2026-02 has no day 30/],
    ['2026-02-29', /2026-02 has no day 29/],
    ['1900-02-29', /1900-02 has no day 29/],
    ['2026-04-31T10:00:00Z', /2026-04 has no day 31/],
    ['2026-00-10', /month 00/],
    ['2026-13-01', /month 13/],
    ['2026-01-00', /has no day 00/],
    ['2026-03-01T24:00:00Z', /hour 24/],
    ['2026-03-01T23:60:00Z', /minute 60/],
    ['2026-03-01T23:59:60Z', /second 60/],
    ['2026-03-01T20:00:00+24:00', /offset/],
    ['2026-03-01T20:00:00+09:60', /offset/],
    ['2026-03-01T20:00:00 24:00', /offset \+24:00 does not exist/],
    ['2026-03-01 20:00:00', /expected epoch milliseconds or an ISO-8601/],
    ['2026-03-01T20:00:00  09:00', /expected epoch milliseconds or an ISO-8601/],
    ['1969-12-31T23:59:59.999Z', /between/],
    ['1970-01-01T08:59:59+09:00', /between/],
    ['9999-12-31T23:59:59-01:00', /between/],
    ['0050-01-01', /between/],
  ])('refuses %p (calendar or range)', (text, why) => {
    expect(reason(text)).toMatch(why);
  });

  it.each([
    'tomorrow',
    '',
    '2026-3-1',
    '2026-03-01T20',
    '2026-03-01 20:00:00',
    '2026-03-01T20:00:00+0900',
    '2026-03-01T20:00:00+09',
    '2026-03-01T20:00:00.Z',
    '2026-03-01T20:00:00ZZ',
    '+2026-03-01',
    '1763712000000.5',
    '-1',
    '1e12',
    'Sun Mar 01 2026',
  ])('refuses %p (not epoch ms, not ISO-8601)', (text) => {
    expect(reason(text)).toMatch(/expected epoch milliseconds or an ISO-8601 date-time/);
  });

  it.each([true, {}, [], [1763712000000]])('refuses %p', (value) => {
    expect(reason(value)).toMatch(/expected epoch milliseconds/);
  });
});

describe('toDate', () => {
  it('turns valid inputs into Dates, keeps null/undefined, leaves anything else for the validator', () => {
    expect(toDate({ value: '2026-03-01T20:00:00Z' })).toEqual(new Date(Date.UTC(2026, 2, 1, 20)));
    expect(toDate({ value: null })).toBeNull();
    expect(toDate({ value: undefined })).toBeUndefined();
    expect(toDate({ value: '2026-02-30' })).toBe('2026-02-30');
    expect(toDate({ value: 999999999999999 })).toBe(999999999999999);
  });
});

describe('DateField in DTOs', () => {
  const errorsOf = (cls: new () => object, plain: Record<string, unknown>) =>
    validateSync(plainToInstance(cls, plain), { whitelist: true, forbidUnknownValues: false, stopAtFirstError: true }).flatMap((e) =>
      Object.values(e.constraints ?? {}).map((message) => ({ field: e.property, message })),
    );

  it('campaign scheduledAt/scheduledEndAt: valid values pass, null clears, bad ones name the field and the reason', () => {
    expect(errorsOf(CreateCampaignDto, { title: 't', scheduledAt: 1763712000000, scheduledEndAt: '2026-03-01T20:00:00Z' })).toEqual([]);
    expect(errorsOf(CreateCampaignDto, { title: 't', scheduledAt: null, scheduledEndAt: null })).toEqual([]);
    expect(errorsOf(CreateCampaignDto, { title: 't', scheduledAt: 999999999999999 })).toEqual([
      { field: 'scheduledAt', message: expect.stringMatching(/^scheduledAt must be epoch milliseconds or an ISO-8601 date-time: .*between/) },
    ]);
    expect(errorsOf(CreateCampaignDto, { title: 't', scheduledEndAt: '2026-02-30' })).toEqual([
      { field: 'scheduledEndAt', message: expect.stringMatching(/^scheduledEndAt .*2026-02 has no day 30/) },
    ]);
  });

  it('public list from/to', () => {
    expect(errorsOf(PublicCampaignListQuery, { from: '2026-03-01', to: '1763712000000' })).toEqual([]);
    expect(errorsOf(PublicCampaignListQuery, { from: '2026-13-01' }).map((e) => e.field)).toEqual(['from']);
    expect(errorsOf(PublicCampaignListQuery, { to: '99999999999999999' }).map((e) => e.field)).toEqual(['to']);
  });
});
