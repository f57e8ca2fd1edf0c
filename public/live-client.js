// The reference client of the /live viewer channel (docs/live-protocol.md), used by the viewer page and the console.
//
//   const live = new LiveClient({accessKey, campaignKey, onSnapshot, onEvent, onConnection});
//   live.start();
//
// It connects with auth {accessKey, campaignKey}, takes the campaign.snapshot the server sends on join,
// and applies every later event exactly once and in order: an event is applied only when its seq is
// lastSeq + 1; an older one is ignored; a newer one is held back and `resync {sinceSeq: lastSeq}` is
// emitted, which brings the missed events (or a fresh snapshot). After a reconnect it resyncs too (the
// server also sends a fresh snapshot on every join; both are handled).

/* global io */

export const LIVE_EVENTS = [
  'goods.salesStatus',
  'goods.stock',
  'goods.list',
  'goods.update',
  'chat.notice',
  'chat.message',
  'campaign.update',
  'campaign.status',
];

/** Chat lines kept in memory (the snapshot brings the last 50). */
export const CHAT_KEPT = 200;

/** The campaign state a page renders, built from a snapshot. */
export function stateFromSnapshot(snapshot) {
  return {
    campaign: { ...snapshot.campaign },
    goods: snapshot.goods.map((g) => ({ ...g })),
    notice: snapshot.notice ? { ...snapshot.notice } : null,
    chat: snapshot.chat.map((c) => ({ ...c })),
  };
}

/** Applies one event to that state (mutates it). */
export function applyEvent(state, type, p) {
  switch (type) {
    case 'goods.salesStatus': {
      const item = state.goods.find((g) => g.goodsId === String(p.goodsId));
      if (item) Object.assign(item, { salesStatus: p.salesStatus, adminName: p.adminName, updatedAt: p.updatedAt });
      break;
    }
    case 'goods.stock': {
      // Only in campaigns that show stock (showStock): the units left of one item.
      const item = state.goods.find((g) => g.goodsId === String(p.goodsId));
      if (item) Object.assign(item, { stock: p.stock, updatedAt: p.updatedAt });
      break;
    }
    case 'goods.list':
      state.goods = p.goods.map((g) => ({ ...g }));
      break;
    case 'goods.update': {
      // The changed items' summaries: each replaces the item of the same goodsId (the list itself comes
      // with goods.list; an item not in it is ignored).
      const byId = new Map(p.goods.map((g) => [g.goodsId, g]));
      state.goods = state.goods.map((g) => (byId.has(g.goodsId) ? { ...byId.get(g.goodsId) } : g));
      break;
    }
    case 'chat.notice':
      state.notice = p.message ? { message: p.message, adminName: p.adminName, createdAt: p.createdAt } : null;
      break;
    case 'chat.message':
      state.chat.push({ id: p.id, message: p.message, adminName: p.adminName, createdAt: p.createdAt });
      if (state.chat.length > CHAT_KEPT) state.chat.splice(0, state.chat.length - CHAT_KEPT);
      break;
    case 'campaign.update':
      // The whole record, as a snapshot carries it.
      state.campaign = { ...p.campaign };
      break;
    case 'campaign.status':
      Object.assign(state.campaign, { campaignStatus: p.campaignStatus, startedAt: p.startedAt, endedAt: p.endedAt });
      break;
    default:
      break;
  }
}

/** How long a gap may stay open after a resync before asking again (ms). */
const RESYNC_RETRY_MS = 2000;

export class LiveClient {
  /**
   * @param {{accessKey: string, campaignKey: string, role?: 'operator', token?: string,
   *   onSnapshot: (snapshot: object) => void,
   *   onEvent: (type: string, payload: object) => void,
   *   onConnection?: (state: 'connecting'|'live'|'reconnecting'|'offline', detail?: string) => void,
   *   onOperatorEvent?: (type: 'import.progress', payload: object) => void}} options
   */
  constructor(options) {
    this.options = options;
    /** seq of the last snapshot or event applied; null before the first snapshot. */
    this.lastSeq = null;
    /** Events that arrived ahead of their turn, by seq. */
    this.pending = new Map();
    this.resyncAt = 0;
    this.resyncTimer = null;
    this.retryTimer = null;
    this.stopped = false;
    this.stats = { snapshots: 0, events: 0, resyncs: 0, reconnects: 0 };
    this.socket = null;
  }

  start() {
    const { accessKey, campaignKey, role, token } = this.options;
    this.setConnection('connecting');
    const socket = io('/live', {
      // An operator's console says so, with the customer's token: it is not counted as a viewer.
      auth: role ? { accessKey, campaignKey, role, token } : { accessKey, campaignKey },
      transports: ['websocket', 'polling'],
      tryAllTransports: true,
    });
    this.socket = socket;
    socket.on('campaign.snapshot', (snapshot) => this.receiveSnapshot(snapshot));
    for (const type of LIVE_EVENTS) socket.on(type, (payload) => this.receive(type, payload));
    // Operators only: the customer's events outside any campaign (no seq, never replayed).
    if (role && this.options.onOperatorEvent) socket.on('import.progress', (payload) => this.options.onOperatorEvent('import.progress', payload));
    socket.on('connect', () => {
      if (this.lastSeq !== null) {
        // A reconnect: ask for what happened meanwhile (the join snapshot comes too).
        this.stats.reconnects += 1;
        this.resync(true);
      }
      this.setConnection('live');
    });
    socket.on('disconnect', (reason) => {
      if (this.stopped) return;
      this.setConnection('reconnecting', reason);
      // The server closed this socket on purpose (e.g. the campaign was deleted): socket.io does not retry.
      if (reason === 'io server disconnect') this.retryLater(3000);
    });
    socket.on('connect_error', (err) => {
      if (this.stopped) return;
      if (socket.active) {
        this.setConnection('reconnecting', err.message); // network or server down: socket.io retries by itself
      } else if (err.data && err.data.retryable) {
        // The server is busy, restarting or limiting this address: it says when to come back.
        this.setConnection('reconnecting', err.message);
        this.retryLater(Math.max(250, Number(err.data.retryAfterMs) || 2000) + Math.random() * 1000);
      } else {
        this.setConnection('offline', err.message); // refused (unknown campaign): try again later
        this.retryLater(15000);
      }
    });
    socket.io.on('reconnect_attempt', () => {
      if (!this.stopped) this.setConnection('reconnecting');
    });
    return this;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.resyncTimer);
    if (this.socket) this.socket.disconnect();
  }

  setConnection(state, detail) {
    this.connection = state;
    if (this.options.onConnection) this.options.onConnection(state, detail);
  }

  retryLater(ms) {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      if (!this.stopped && this.socket && !this.socket.connected) this.socket.connect();
    }, ms);
  }

  receiveSnapshot(snapshot) {
    const older = this.lastSeq !== null && snapshot.seq < this.lastSeq;
    this.stats.snapshots += 1;
    this.lastSeq = snapshot.seq;
    this.options.onSnapshot(snapshot);
    // A snapshot older than what was shown (it was read before events that already arrived): replay from it.
    if (older) this.resync(true);
    this.drain();
  }

  receive(type, payload) {
    const seq = Number(payload && payload.seq);
    if (!Number.isInteger(seq)) return;
    if (this.lastSeq === null) {
      this.pending.set(seq, { type, payload }); // before the first snapshot: keep it for after
      return;
    }
    if (type === 'campaign.status' && payload.campaignStatus === 'NOT_EXIST') {
      // The campaign was deleted: final, whatever its seq. It may come past a gap no resync can fill any
      // more (its event log went with it), or below lastSeq (a node that missed the last events tells its
      // viewers with the seq after the last one it sent, and this viewer's snapshot may be newer): what
      // waits for a gap is dropped.
      this.pending.clear();
      clearTimeout(this.resyncTimer);
      this.apply(type, payload);
      return;
    }
    if (seq <= this.lastSeq) return; // seen already (a resync answer overlapping a snapshot)
    if (seq === this.lastSeq + 1) {
      this.apply(type, payload);
      this.drain();
      return;
    }
    this.pending.set(seq, { type, payload }); // a gap: hold this one back and ask for the missed ones
    this.resync(false);
  }

  apply(type, payload) {
    this.lastSeq = Number(payload.seq);
    this.stats.events += 1;
    this.options.onEvent(type, payload);
  }

  drain() {
    for (const seq of [...this.pending.keys()]) if (seq <= this.lastSeq) this.pending.delete(seq);
    while (this.pending.has(this.lastSeq + 1)) {
      const next = this.pending.get(this.lastSeq + 1);
      this.pending.delete(this.lastSeq + 1);
      this.apply(next.type, next.payload);
    }
    if (this.pending.size) this.resync(false);
    else clearTimeout(this.resyncTimer);
  }

  /** Emits resync {sinceSeq: lastSeq}; unless forced, at most once per RESYNC_RETRY_MS, re-checked after it. */
  resync(force) {
    if (!this.socket || !this.socket.connected || this.lastSeq === null) return;
    const now = Date.now();
    if (!force && now - this.resyncAt < RESYNC_RETRY_MS) return;
    this.resyncAt = now;
    this.stats.resyncs += 1;
    this.socket.emit('resync', { sinceSeq: this.lastSeq });
    clearTimeout(this.resyncTimer);
    this.resyncTimer = setTimeout(() => {
      if (this.pending.size) this.resync(true);
    }, RESYNC_RETRY_MS);
  }
}
