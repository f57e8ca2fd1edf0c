import type { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import type { Transactions } from '../database/transactions';
import type { LiveEvent, PendingEvent } from '../live/live-events';
import type { LiveNotifier } from '../live/live-notifier';
import type { CampaignEventLog } from './campaign-event-log';
import { CampaignChanges } from './campaign-changes';
import { CampaignWriter, MAX_EVENT_HOLD_MS } from './campaign-writer';
import type { Campaign } from './entities/campaign.entity';

/**
 * CampaignWriter.change with its transaction, campaign look-up and event log stood in for: the events a
 * change records get the campaign's next seqs in the order the changes reach the log (as the row lock
 * makes them do), and what is pushed to viewers is recorded.
 */
function writer() {
  let seq = 0;
  const campaign = { id: 7, campaignKey: 'KEY' } as Campaign;
  const run = <T>(fn: (em: EntityManager) => Promise<T>) => fn({} as EntityManager);
  const transactions = { run, runAgainOnDeadlock: run } as unknown as Transactions;
  const log = {
    record: (_em: EntityManager, campaignId: number, events: PendingEvent[]): Promise<LiveEvent[]> =>
      Promise.resolve(events.map((e) => ({ campaignId, seq: ++seq, type: e.type, payload: { ...e.payload, seq } }) as LiveEvent)),
  } as unknown as CampaignEventLog;
  const pushed: number[][] = [];
  const notifier = { publish: (events: LiveEvent[]) => pushed.push(events.map((e) => e.seq)), campaignStored: () => undefined } as unknown as LiveNotifier;
  const w = new CampaignWriter(transactions, log, notifier, new CampaignChanges());
  jest.spyOn(w, 'find').mockResolvedValue(campaign);
  const tenant = { id: 1 } as Tenant;
  const status = {
    type: 'goods.salesStatus',
    payload: { campaignKey: 'KEY', goodsId: '1', salesStatus: 'SOLD_OUT', adminName: null, updatedAt: 0 },
  } as PendingEvent;
  /** A change recording one event once `gate` resolves (or at once). */
  const change = (gate: Promise<void> = Promise.resolve(), fail = false) =>
    w.change(tenant, 'KEY', async () => {
      await gate;
      if (fail) throw new Error('refused');
      return { result: 'ok', events: [status] };
    });
  return { change, pushed };
}

/** A promise and the function that resolves it. */
function gate(): [Promise<void>, () => void] {
  let open = () => undefined as void;
  const p = new Promise<void>((resolve) => (open = resolve));
  return [p, open];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('CampaignWriter.change', () => {
  it('pushes the events of a change that runs alone as soon as it commits', async () => {
    const { change, pushed } = writer();
    await change();
    expect(pushed).toEqual([[1]]);
    await change();
    expect(pushed).toEqual([[1], [2]]);
  });

  it('holds the events of a committed change for the changes of the campaign still running, and pushes them all with the last', async () => {
    const { change, pushed } = writer();
    const [second, openSecond] = gate();
    const [third, openThird] = gate();
    const first = change();
    const others = [change(second), change(third)];
    await first;
    expect(pushed).toEqual([]); // two more are running
    openSecond();
    await others[0];
    expect(pushed).toEqual([]);
    openThird();
    await others[1];
    expect(pushed).toEqual([[1, 2, 3]]);
  });

  it(`holds them at most MAX_EVENT_HOLD_MS (${MAX_EVENT_HOLD_MS} ms) for a change that takes longer`, async () => {
    const { change, pushed } = writer();
    const [slow, openSlow] = gate();
    const stuck = change(slow);
    await change(); // commits first (seq 1) while the other still runs
    expect(pushed).toEqual([]);
    await sleep(MAX_EVENT_HOLD_MS + 20);
    expect(pushed).toEqual([[1]]);
    openSlow();
    await stuck;
    expect(pushed).toEqual([[1], [2]]);
  });

  it('a change that fails still lets go of the events held for it', async () => {
    const { change, pushed } = writer();
    const [failing, fail] = gate();
    const first = change();
    const refused = change(failing, true);
    await first;
    expect(pushed).toEqual([]);
    fail();
    await expect(refused).rejects.toThrow('refused');
    expect(pushed).toEqual([[1]]);
  });
});
