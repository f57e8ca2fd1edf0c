import { MAX_SHARED_SNAPSHOTS, SNAPSHOT_BATCH_MS, SNAPSHOT_REUSE_MS, SharedSnapshot, SharedSnapshots } from './shared-snapshots';

/** SharedSnapshots over a fake clock and a source whose reads are recorded and answered by the test. */
function shared() {
  let clock = 1_000_000;
  let seq = 10;
  const reads: Array<{ campaignId: number; baseUrl: string; at: number; answer: (s: SharedSnapshot | null) => void; fail: (e: Error) => void }> = [];
  const snapshots = new SharedSnapshots(
    (campaignId, _currency, baseUrl) =>
      new Promise<SharedSnapshot | null>((answer, fail) => {
        reads.push({ campaignId, baseUrl, at: clock, answer, fail });
      }),
    () => clock,
  );
  const snapshot = (s = seq): SharedSnapshot => ({ seq: s, event: { type: 'campaign.snapshot', payload: { seq: s }, frame: null } });
  return {
    snapshots,
    reads,
    snapshot,
    setSeq: (s: number) => (seq = s),
    /** Moves the fake clock and jest's timers on by `ms`, letting promises settle in between. */
    async advance(ms: number) {
      clock += ms;
      await jest.advanceTimersByTimeAsync(ms);
    },
    /** Answers the last read with a snapshot at the current seq. */
    async answer(s = snapshot()) {
      reads[reads.length - 1].answer(s);
      await jest.advanceTimersByTimeAsync(0);
    },
  };
}

describe('SharedSnapshots', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('viewers asking within the batch window share one read and get the same encoded snapshot', async () => {
    const s = shared();
    const asked = [s.snapshots.get(1, 'KRW', 'http://a')];
    await s.advance(SNAPSHOT_BATCH_MS / 2);
    asked.push(s.snapshots.get(1, 'KRW', 'http://a'));
    expect(s.reads).toHaveLength(0); // not before the window closes
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(1);
    await s.answer();
    const [a, b] = await Promise.all(asked);
    expect(a).toBe(b);
    expect(a?.seq).toBe(10);
  });

  it('a snapshot serves later viewers for SNAPSHOT_REUSE_MS after its read started, then is read anew', async () => {
    const s = shared();
    const first = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    await s.answer();
    await s.advance(SNAPSHOT_REUSE_MS - 100);
    expect(await s.snapshots.get(1, 'KRW', 'http://a')).toBe(await first);
    expect(s.reads).toHaveLength(1);
    await s.advance(100);
    expect(s.snapshots.size).toBe(0); // dropped once stale, even though nobody asked again
    const later = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(2);
    await s.answer(s.snapshot(11));
    expect((await later)?.seq).toBe(11);
  });

  it('each campaign and base URL has its own', async () => {
    const s = shared();
    void s.snapshots.get(1, 'KRW', 'http://a');
    void s.snapshots.get(1, 'KRW', 'https://b');
    void s.snapshots.get(2, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads.map((r) => [r.campaignId, r.baseUrl])).toEqual([
      [1, 'http://a'],
      [1, 'https://b'],
      [2, 'http://a'],
    ]);
  });

  it('an event of the campaign drops its snapshot once read: the next viewer gets a new read, other campaigns keep theirs', async () => {
    const s = shared();
    const first = s.snapshots.get(1, 'KRW', 'http://a');
    void s.snapshots.get(2, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    s.reads[0].answer(s.snapshot(10));
    s.reads[1].answer(s.snapshot(3));
    await first;
    s.snapshots.changed(1);
    const next = s.snapshots.get(1, 'KRW', 'http://a');
    void s.snapshots.get(2, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads.map((r) => r.campaignId)).toEqual([1, 2, 1]);
    await s.answer(s.snapshot(11));
    expect((await next)?.seq).toBe(11);
  });

  it('an event while the snapshot is being read: those who asked before get it, later viewers a new read', async () => {
    const s = shared();
    const early = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(1);
    s.snapshots.changed(1);
    const late = s.snapshots.get(1, 'KRW', 'http://a');
    s.reads[0].answer(s.snapshot(10));
    expect((await early)?.seq).toBe(10);
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(2);
    await s.answer(s.snapshot(11));
    expect((await late)?.seq).toBe(11);
    // The first read, answered after it was dropped, is not shared afterwards either.
    expect(await s.snapshots.get(1, 'KRW', 'http://a')).toBe(await late);
  });

  it('an event during the batch window does not drop it: its read has not started, and will hold the event', async () => {
    const s = shared();
    const early = s.snapshots.get(1, 'KRW', 'http://a');
    s.snapshots.changed(1);
    const late = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(1);
    await s.answer();
    expect(await early).toBe(await late);
  });

  it('a resync that read a newer seq gets a new read instead of an older shared snapshot; one as new or newer is shared', async () => {
    const s = shared();
    const first = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    await s.answer(s.snapshot(10));
    expect(await s.snapshots.get(1, 'KRW', 'http://a', 10)).toBe(await first);
    const fresh = s.snapshots.get(1, 'KRW', 'http://a', 12);
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(2);
    // Being read since before the resync read its seq: not trusted either.
    const again = s.snapshots.get(1, 'KRW', 'http://a', 12);
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(3);
    s.reads[1].answer(s.snapshot(12));
    s.reads[2].answer(s.snapshot(12));
    expect((await fresh)?.seq).toBe(12);
    expect((await again)?.seq).toBe(12);
  });

  it('a read that fails or finds no campaign is not kept', async () => {
    const s = shared();
    const failing = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    s.reads[0].fail(new Error('database down'));
    await expect(failing).rejects.toThrow('database down');
    const gone = s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(2);
    s.reads[1].answer(null);
    expect(await gone).toBeNull();
    expect(s.snapshots.size).toBe(0);
    void s.snapshots.get(1, 'KRW', 'http://a');
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(3);
  });

  it(`keeps at most MAX_SHARED_SNAPSHOTS (${MAX_SHARED_SNAPSHOTS}): the oldest go first, and those asking for one evicted read it anew`, async () => {
    const s = shared();
    for (let id = 1; id <= MAX_SHARED_SNAPSHOTS + 5; id += 1) void s.snapshots.get(id, 'KRW', 'http://a');
    expect(s.snapshots.size).toBe(MAX_SHARED_SNAPSHOTS);
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads).toHaveLength(MAX_SHARED_SNAPSHOTS + 5);
    for (const read of s.reads) read.answer(s.snapshot(read.campaignId));
    await s.advance(0);
    void s.snapshots.get(1, 'KRW', 'http://a'); // evicted: read again
    void s.snapshots.get(MAX_SHARED_SNAPSHOTS + 5, 'KRW', 'http://a'); // kept
    await s.advance(SNAPSHOT_BATCH_MS);
    expect(s.reads.slice(MAX_SHARED_SNAPSHOTS + 5).map((r) => r.campaignId)).toEqual([1]);
    expect(s.snapshots.size).toBe(MAX_SHARED_SNAPSHOTS);
    await s.advance(SNAPSHOT_REUSE_MS);
    expect(s.snapshots.size).toBe(1); // the last read's, still in its lifetime
  });
});
