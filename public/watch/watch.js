// The viewer page: /watch/{accessKey}/{campaignKey}. Everything it shows comes from the /live channel
// (campaign.snapshot, then events), through LiveClient, which orders events by seq and resyncs.

import {
  campaignStatusOf,
  el,
  formatDateTime,
  formatPercent,
  formatPrice,
  formatTime,
  pageLocale,
  salesBadge,
  salesStatusOf,
  setPill,
} from '/assets/shared.js';
import { applyEvent, LiveClient, stateFromSnapshot } from '/assets/live-client.js';

const [accessKey, campaignKey] = location.pathname
  .split('/')
  .filter(Boolean)
  .slice(1, 3)
  .map((part) => decodeURIComponent(part));
const locale = pageLocale();
document.documentElement.lang = locale;

const $ = (id) => document.getElementById(id);
// The channel's state, not the broadcast's (the status pill tells that): "Live" here read as "on air" on
// a page of a broadcast that had ended or not begun.
const CONNECTION_TEXT = {
  connecting: 'Connecting…',
  live: 'Connected',
  reconnecting: 'Reconnecting…',
  offline: 'Offline',
};

/** @type {ReturnType<typeof stateFromSnapshot> | null} */
let state = null;
const cards = new Map();

function announce(text) {
  const node = $('announcer');
  node.textContent = '';
  // A fresh text node after a tick makes screen readers announce the same text twice in a row too.
  setTimeout(() => {
    node.textContent = text;
  }, 30);
}

/**
 * The channel's state in words. Why it is offline (the server's or Socket.IO's message, e.g. "campaign
 * … not found") is for integrators, kept in data-detail; a viewer reads what the page says about it.
 */
function setConnection(connection, detail) {
  const node = $('connection');
  node.dataset.state = connection;
  if (detail) node.dataset.detail = detail;
  else delete node.dataset.detail;
  document.body.dataset.connection = connection;
  node.textContent = CONNECTION_TEXT[connection] ?? connection;
  if (connection === 'offline' && !state) {
    $('title').textContent = 'This broadcast is not available';
    document.title = 'Broadcast not available';
    showGone('There is no broadcast at this address, or it is not available now. Check the link you were given.');
  }
}

/** No broadcast to show (none at this address, or it was deleted): a message instead of empty lists. */
function showGone(text) {
  const ended = $('ended');
  ended.hidden = false;
  ended.textContent = text;
  showSections(false);
  $('notice').hidden = true;
}

/** The goods and chat sections, and the link that skips to the goods (it would lead nowhere without them). */
function showSections(shown) {
  $('goods-section').hidden = !shown;
  $('chat-section').hidden = !shown;
  $('skip').hidden = !shown;
}

// ------------------------------------------------------------------ rendering

function renderHeader() {
  const { campaign } = state;
  $('title').textContent = campaign.title;
  document.title = `${campaign.title} · ${campaignStatusOf(campaign.campaignStatus).label}`;
  const pill = $('campaign-status');
  pill.hidden = false;
  setPill(pill, campaign.campaignStatus);
  document.body.dataset.campaignStatus = campaign.campaignStatus;
  let schedule = '';
  if (campaign.campaignStatus === 'READY' && campaign.scheduledAt) schedule = `Starts ${formatDateTime(campaign.scheduledAt, locale)}`;
  if (campaign.campaignStatus === 'ONAIR' && campaign.startedAt) schedule = `Live since ${formatTime(campaign.startedAt, locale)}`;
  if (campaign.campaignStatus === 'CLOSED' && campaign.endedAt) schedule = `Ended ${formatDateTime(campaign.endedAt, locale)}`;
  $('schedule').textContent = schedule;
  const ended = $('ended');
  ended.hidden = campaign.campaignStatus !== 'CLOSED' && campaign.campaignStatus !== 'NOT_EXIST';
  ended.textContent = campaign.campaignStatus === 'NOT_EXIST' ? 'This broadcast no longer exists.' : 'This broadcast has ended. Thank you for watching!';
}

function renderNotice() {
  const notice = state.notice;
  $('notice').hidden = !notice;
  $('notice-text').textContent = notice ? notice.message : '';
}

/** A stored file's path on this service: /media/<2 hex>/<SHA-256>[-<width>[-up]].<ext> (see src/media). */
const MEDIA_PATH = /^\/media\/[0-9a-f]{2}\/[0-9a-f]{64}(?:-\d+(?:-up)?)?\.[a-z0-9]+$/;

/**
 * An image URL to load. The service's own files are served under /media/ of every address it answers
 * on, but a live event carries links built on the host of the request that made the change (an
 * operator on localhost, a shop backend on an internal name) unless PUBLIC_BASE_URL is set: those are
 * loaded from this page's own origin instead (the page's Content-Security-Policy allows only that, and
 * the viewer may not reach the writer's host at all). Any other URL is left as it is.
 */
function imageSrc(url) {
  try {
    const parsed = new URL(url, location.href);
    if ((parsed.protocol === 'http:' || parsed.protocol === 'https:') && MEDIA_PATH.test(parsed.pathname) && !parsed.search && !parsed.hash) {
      return parsed.origin === location.origin ? url : parsed.pathname;
    }
  } catch {
    // not a URL: left as it is
  }
  return url;
}

function thumbnail(item) {
  if (item.thumbnailUrl) {
    return el('img', { class: 'thumb', src: imageSrc(item.thumbnailUrl), alt: '', loading: 'lazy', width: 88, height: 88 });
  }
  return el('span', { class: 'thumb none', 'aria-hidden': 'true' }, 'No image');
}

/** Builds or updates one goods card in place (keeps its image element, so nothing flickers). */
function card(item) {
  let node = cards.get(item.goodsId);
  const signature = JSON.stringify([
    item.thumbnailUrl,
    item.name,
    item.brand,
    item.url,
    item.originalPrice,
    item.discountedPrice,
    item.discountPercentage,
    item.currency,
    item.salesStatus,
    item.showingNow,
    item.stock,
  ]);
  if (node && node.dataset.signature === signature) return node;
  const discounted = item.discountedPrice !== null && item.discountedPrice !== undefined;
  const original = item.originalPrice !== null && item.originalPrice !== undefined;
  const price = discounted ? item.discountedPrice : item.originalPrice;
  const showOriginal = discounted && original && Number(item.originalPrice) > Number(item.discountedPrice);
  const percent = formatPercent(item.discountPercentage, locale);
  const fresh = el(
    'li',
    {
      class: `goods-card${item.showingNow ? ' showing' : ''}`,
      dataset: { goodsId: item.goodsId, status: item.salesStatus, signature },
      'aria-current': item.showingNow ? 'true' : false,
    },
    thumbnail(item),
    el(
      'div',
      { class: 'info' },
      el('a', { class: 'name', href: item.url, target: '_blank', rel: 'noopener' }, item.name),
      item.brand ? el('span', { class: 'brand' }, item.brand) : null,
      el(
        'div',
        { class: 'prices' },
        percent ? el('span', { class: 'badge badge-discount' }, el('span', { class: 'visually-hidden' }, 'Discount '), `-${percent}`) : null,
        price !== null && price !== undefined ? el('span', { class: 'price' }, formatPrice(price, item.currency, locale)) : null,
        showOriginal
          ? el('s', { class: 'original' }, el('span', { class: 'visually-hidden' }, 'Regular price '), formatPrice(item.originalPrice, item.currency, locale))
          : null,
      ),
      el(
        'div',
        { class: 'tags' },
        item.showingNow ? el('span', { class: 'badge badge-showing' }, 'Showing now') : null,
        salesBadge(item.salesStatus),
        // Only in campaigns that show stock (the summaries carry it then); null: not tracked.
        typeof item.stock === 'number' && item.stock > 0 ? el('span', { class: 'stock-left' }, `${item.stock} left`) : null,
      ),
    ),
  );
  if (node) {
    // Keep the loaded image when it did not change.
    const oldImg = node.querySelector('img.thumb');
    const newImg = fresh.querySelector('img.thumb');
    if (oldImg && newImg && oldImg.getAttribute('src') === newImg.getAttribute('src')) newImg.replaceWith(oldImg);
    node.replaceWith(fresh);
  }
  cards.set(item.goodsId, fresh);
  return fresh;
}

function renderGoods() {
  const list = $('goods');
  const items = [...state.goods].sort((a, b) => a.sortOrder - b.sortOrder);
  const keep = new Set(items.map((i) => i.goodsId));
  for (const [id, node] of cards) {
    if (!keep.has(id)) {
      node.remove();
      cards.delete(id);
    }
  }
  items.forEach((item, index) => {
    const node = card(item);
    if (list.children[index] !== node) list.insertBefore(node, list.children[index] ?? null);
  });
  $('goods-empty').hidden = items.length > 0;
}

function chatLine(line) {
  return el(
    'li',
    { dataset: { chatId: line.id } },
    el('bdi', { class: 'who' }, line.adminName || 'Host'),
    el('bdi', { class: 'text' }, line.message),
    el('time', { datetime: new Date(line.createdAt).toISOString() }, formatTime(line.createdAt, locale)),
  );
}

/**
 * The chat as the state holds it. Lines already on the page stay as they are (the list is role=log with
 * aria-relevant=additions: a screen reader reads only the lines added, not the whole log again after each
 * snapshot, as on a reconnect); lines gone are removed, new ones inserted in place.
 */
function renderChat() {
  const list = $('chat');
  const shown = new Map([...list.children].map((node) => [node.dataset.chatId, node]));
  const keep = new Set(state.chat.map((line) => String(line.id)));
  for (const [id, node] of shown) if (!keep.has(id)) node.remove();
  state.chat.forEach((line, index) => {
    const node = shown.get(String(line.id)) ?? chatLine(line);
    if (list.children[index] !== node) list.insertBefore(node, list.children[index] ?? null);
  });
  $('chat-empty').hidden = state.chat.length > 0;
  list.scrollTop = list.scrollHeight;
}

function appendChat(line) {
  const list = $('chat');
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.append(chatLine(line));
  while (list.children.length > state.chat.length) list.firstElementChild.remove();
  $('chat-empty').hidden = true;
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function renderAll() {
  renderHeader();
  renderNotice();
  renderGoods();
  renderChat();
  showSections(state.campaign.campaignStatus !== 'NOT_EXIST');
}

// ------------------------------------------------------------------ live channel

function onSnapshot(snapshot) {
  state = stateFromSnapshot(snapshot);
  renderAll();
  document.body.dataset.seq = String(snapshot.seq);
}

function onEvent(type, payload) {
  if (!state) return;
  const before = type === 'goods.salesStatus' ? state.goods.find((g) => g.goodsId === String(payload.goodsId)) : null;
  const previousStatus = before ? before.salesStatus : null;
  applyEvent(state, type, payload);
  document.body.dataset.seq = String(payload.seq);
  switch (type) {
    case 'goods.salesStatus':
      renderGoods();
      if (before && previousStatus !== payload.salesStatus) announce(`${before.name}: ${salesStatusOf(payload.salesStatus).label}`);
      break;
    case 'goods.stock':
    case 'goods.list':
    case 'goods.update':
      renderGoods();
      break;
    case 'chat.notice':
      renderNotice();
      if (payload.message) announce(`Notice: ${payload.message}`);
      break;
    case 'chat.message':
      appendChat(state.chat[state.chat.length - 1]);
      break;
    case 'campaign.update':
      renderHeader();
      break;
    case 'campaign.status':
      renderHeader();
      announce(
        payload.campaignStatus === 'ONAIR'
          ? 'The broadcast is live'
          : payload.campaignStatus === 'CLOSED'
            ? 'The broadcast has ended'
            : `Broadcast: ${campaignStatusOf(payload.campaignStatus).label}`,
      );
      if (payload.campaignStatus === 'NOT_EXIST') {
        live.stop();
        // Nothing of a deleted broadcast stays on show: no goods, prices, shop links or chat.
        Object.assign(state, { goods: [], chat: [], notice: null });
        renderAll();
        setConnection('offline', 'the broadcast was removed');
      }
      break;
    default:
      break;
  }
}

const live = new LiveClient({
  accessKey,
  campaignKey,
  onSnapshot,
  onEvent,
  onConnection: setConnection,
});

if (!accessKey || !campaignKey || typeof io !== 'function') {
  setConnection('offline', typeof io !== 'function' ? 'the Socket.IO client did not load' : 'no broadcast in this address');
} else {
  live.start();
}

// For integrators poking at the page (and for the tests): the client and its state.
window.livegoods = {
  live,
  get state() {
    return state;
  },
};
