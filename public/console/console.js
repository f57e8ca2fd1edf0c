// The operator console: /console. Talks to the console API (Bearer token the operator pastes) and
// listens on the /live channel of the open campaign for its chat log and for other operators' changes.

import {
  bdi,
  el,
  formatDateTime,
  joined,
  formatPercent,
  formatPrice,
  formatTime,
  keepFocus,
  pageLocale,
  salesBadge,
  SALES_STATUS,
  setPill,
} from '/assets/shared.js';
import { LiveClient } from '/assets/live-client.js';

const $ = (id) => document.getElementById(id);
const locale = pageLocale();
const CAMPAIGN_PAGE = 20;
const SEARCH_PAGE = 10;
const STORE = 'livegoods.console';
/** How often the open campaign's viewer count is read again (no event tells it). */
const VIEWER_COUNT_MS = 5000;
/** The service accepts a token up to 60 s past its exp (clock skew, docs/authentication.md): so does the page. */
const CLOCK_SKEW_MS = 60_000;

const session = { accessKey: '', token: '', claims: null, refused: false };
const view = {
  page: 1,
  total: 0,
  campaigns: [],
  /** The open campaign (console GET: detail form with goods summaries). */
  current: null,
  live: null,
  chat: [],
  search: { keyword: '', page: 1, total: 0, results: [], done: false },
  reloadTimer: null,
  /** The settings form's inputs as filled from the open campaign (see editFormInputs). */
  filledForm: null,
  viewerCountTimer: null,
};

// ------------------------------------------------------------------ API access and errors

class ApiError extends Error {
  constructor(status, body, fallback) {
    super(body && typeof body._e === 'string' ? body._e : fallback);
    this.status = status;
    this.code = body && typeof body._s === 'number' ? body._s : null;
    this.fields = body && Array.isArray(body.errors) ? body.errors : [];
  }
}

/** One API call; any non-2xx answer becomes an ApiError carrying the HTTP status and the `_e` text. */
async function api(method, path, body) {
  const headers = { Accept: 'application/json', Authorization: `Bearer ${session.token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  return answerOf(res);
}

/** The JSON body of an answer (null when empty or not JSON); an ApiError when the status is not 2xx. */
async function answerOf(res) {
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) throw new ApiError(res.status, data, text.slice(0, 200) || res.statusText || 'no answer');
  return data;
}

const ak = () => encodeURIComponent(session.accessKey);
const campaignsPath = () => `/v1/console/${ak()}/campaigns`;
const campaignPath = (key) => `${campaignsPath()}/${encodeURIComponent(key)}`;

function showError(label, err) {
  let text;
  if (err instanceof ApiError) {
    text = `${label} failed: HTTP ${err.status}${err.code !== null ? ` (${err.code})` : ''}: ${err.message}`;
    if (err.status === 401) text += session.token ? '. Paste a fresh token below.' : '. Check the access key and paste a fresh token.';
  } else if (err instanceof TypeError) {
    text = `${label} failed: the service did not answer (${err.message}).`;
  } else {
    text = `${label} failed: ${err && err.message ? err.message : err}`;
  }
  $('error-text').textContent = text;
  const fields = err instanceof ApiError ? err.fields : [];
  $('error-fields').replaceChildren(...fields.map((f) => el('li', {}, `${f.field}: ${f.message}`)));
  // Signed in and the token refused (expired, or no longer valid): a new one can be pasted here, in place.
  const signedIn = Boolean(session.token) && !$('workspace').hidden;
  if (signedIn && err instanceof ApiError && err.status === 401 && !session.refused) {
    session.refused = true;
    renderWhoami();
  }
  const renew = signedIn && session.refused;
  const offered = !$('renew-form').hidden;
  $('renew-form').hidden = !renew;
  $('error').hidden = false;
  if (renew && !offered) $('renew-token').focus();
}

function clearError() {
  $('renew-form').hidden = true;
  $('error').hidden = true;
  $('error-text').textContent = '';
  $('error-fields').replaceChildren();
}

let flashTimer = null;
/** A short confirmation: strings, and user text as bdi() nodes. */
function flash(...parts) {
  $('flash').replaceChildren(...parts);
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => {
    $('flash').textContent = '';
  }, 6000);
}

/**
 * Runs one operator action: clears the last error (unless quiet), marks the button busy (a second click
 * meanwhile is ignored), and shows any failure in the alert box. Returns the work's result or undefined.
 */
async function act(label, work, { button, quiet } = {}) {
  if (button) {
    if (button.getAttribute('aria-busy') === 'true') return undefined;
    button.setAttribute('aria-busy', 'true');
  }
  if (!quiet) clearError();
  try {
    return await work();
  } catch (err) {
    showError(label, err);
    return undefined;
  } finally {
    if (button) button.removeAttribute('aria-busy');
  }
}

// ------------------------------------------------------------------ sign in

function decodeClaims(token) {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const binary = atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, '='));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}

/** Refuses, before any request, what is clearly not a usable token (a secret key above all). */
function checkCredentials(accessKey, token) {
  if (!accessKey) return 'Enter the access key.';
  if (!token) return 'Paste a token.';
  if (!token.includes('.') && /^[A-Za-z0-9+/_-]{40,}={0,2}$/.test(token)) {
    return 'That looks like a secret key. Never paste the secret key here: paste a token signed with it (a JWT: three parts separated by dots).';
  }
  const claims = decodeClaims(token);
  if (!claims) return 'That is not a token: a JWT has three base64url parts separated by dots.';
  if (claims.accessKey && claims.accessKey !== accessKey) return `This token was issued for access key ${claims.accessKey}, not ${accessKey}.`;
  if (tokenExpired(claims)) {
    return `This token expired at ${formatDateTime(claims.exp * 1000, locale)}. Mint a new one.`;
  }
  return '';
}

/** Expired as the service sees it: 60 s past its exp. */
function tokenExpired(claims) {
  return typeof claims.exp === 'number' && claims.exp * 1000 + CLOCK_SKEW_MS <= Date.now();
}

/** "token valid until 11:27 AM" (with the date when not today), "token expired at …" once it is. */
function renderWhoami() {
  const { accessKey, claims } = session;
  if (!accessKey) {
    $('whoami').textContent = '';
    delete $('whoami').dataset.token;
    return;
  }
  const name = claims && claims.name ? [' · ', bdi(claims.name)] : [];
  let until = '';
  let state = session.refused ? 'refused' : 'valid';
  if (claims && typeof claims.exp === 'number') {
    const ms = claims.exp * 1000;
    const when = new Date(ms).toDateString() === new Date().toDateString() ? formatTime(ms, locale) : formatDateTime(ms, locale);
    if (tokenExpired(claims)) state = 'expired';
    until = state === 'expired' ? ` · token expired at ${when}` : ` · token valid until ${when}`;
  }
  if (state === 'refused') until = ' · token refused: paste a fresh one';
  $('whoami').replaceChildren(`Access key ${accessKey}`, ...name, until);
  $('whoami').dataset.token = state;
}
setInterval(() => {
  if (session.accessKey) renderWhoami();
}, 15_000);

/** Takes a fresh token for the signed-in access key: the open campaign stays open, its live channel reconnects with it. */
async function renewToken(token) {
  token = token.trim().replace(/^Bearer\s+/i, '');
  const problem = checkCredentials(session.accessKey, token);
  if (problem) throw new Error(problem);
  const previous = { token: session.token, claims: session.claims, refused: session.refused };
  Object.assign(session, { token, claims: decodeClaims(token), refused: false });
  try {
    await loadCampaigns(view.page);
  } catch (err) {
    Object.assign(session, previous);
    throw err;
  }
  sessionStorage.setItem(STORE, JSON.stringify({ accessKey: session.accessKey, token }));
  $('renew-token').value = '';
  clearError();
  renderWhoami();
  if (view.current) {
    const key = view.current.campaignKey;
    await loadCampaign(key, false);
    connectLive(key);
  }
}

async function signIn(accessKey, token) {
  accessKey = accessKey.trim();
  token = token.trim().replace(/^Bearer\s+/i, '');
  const problem = checkCredentials(accessKey, token);
  if (problem) throw new Error(problem);
  Object.assign(session, { accessKey, token, claims: decodeClaims(token), refused: false });
  await loadCampaigns(1);
  sessionStorage.setItem(STORE, JSON.stringify({ accessKey, token }));
  $('signin').hidden = true;
  $('workspace').hidden = false;
  $('sign-out').hidden = false;
  $('signin-token').value = '';
  renderWhoami();
}

function signOut() {
  sessionStorage.removeItem(STORE);
  if (view.live) view.live.stop();
  clearInterval(view.viewerCountTimer);
  stopImportPolling();
  Object.assign(importing, { jobId: null, errorText: null });
  Object.assign(session, { accessKey: '', token: '', claims: null, refused: false });
  Object.assign(view, { current: null, live: null, campaigns: [], chat: [] });
  clearError();
  $('workspace').hidden = true;
  $('campaign').hidden = true;
  $('signin').hidden = false;
  $('sign-out').hidden = true;
  renderWhoami();
  history.replaceState(null, '', location.pathname);
  $('signin-token').focus();
}

// ------------------------------------------------------------------ campaigns list

async function loadCampaigns(page) {
  const data = await api('GET', `${campaignsPath()}?page=${page}&count=${CAMPAIGN_PAGE}`);
  view.page = page;
  view.total = data.totalCount;
  view.campaigns = data.results;
  renderCampaigns();
}

function renderCampaigns() {
  const rows = view.campaigns.map((c) => {
    const pill = el('span', { class: 'pill' });
    setPill(pill, c.campaignStatus, { operator: true });
    const current = view.current && view.current.campaignKey === c.campaignKey;
    return el(
      'tr',
      { 'aria-current': current ? 'true' : false, dataset: { campaignKey: c.campaignKey } },
      el(
        'td',
        {},
        el(
          'button',
          { type: 'button', class: 'linkish', dataset: { focus: `open:${c.campaignKey}` }, onclick: () => openCampaign(c.campaignKey, true) },
          c.title,
        ),
      ),
      el('td', {}, pill),
      el('td', { class: 'small' }, c.scheduledAt ? formatDateTime(c.scheduledAt, locale) : '—'),
    );
  });
  keepFocus(() => $('campaigns-body').replaceChildren(...rows));
  const pages = Math.max(1, Math.ceil(view.total / CAMPAIGN_PAGE));
  $('campaigns-empty').hidden = view.total > 0;
  $('campaigns-table').hidden = view.total === 0;
  $('campaigns-page').textContent = `Page ${view.page} of ${pages} · ${view.total} campaign${view.total === 1 ? '' : 's'}`;
  $('campaigns-pager').hidden = pages <= 1 && view.page <= 1;
  $('campaigns-prev').disabled = view.page <= 1;
  $('campaigns-next').disabled = view.page >= pages;
}

// ------------------------------------------------------------------ the open campaign

function toLocalInput(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A datetime-local value (local time) as epoch ms; empty clears (null). */
function fromLocalInput(value) {
  if (!value) return null;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? null : ms;
}

async function openCampaign(campaignKey, focus) {
  const done = await act('Opening the campaign', async () => {
    await loadCampaign(campaignKey, true);
    return true;
  });
  if (!done) return;
  history.replaceState(null, '', `#${encodeURIComponent(campaignKey)}`);
  renderCampaigns();
  connectLive(campaignKey);
  if (focus) $('campaign-title').focus();
}

async function loadCampaign(campaignKey, fillForm) {
  const [campaign, places] = await Promise.all([api('GET', campaignPath(campaignKey)), api('GET', `${campaignPath(campaignKey)}/goods`)]);
  // The summaries carry stock only when viewers see it; the operator always does (CampaignGoods).
  const stockOf = new Map(places.results.map((p) => [p.goodsId, { stock: p.stock, almostSoldOutAt: p.almostSoldOutAt }]));
  for (const item of campaign.goods ?? []) Object.assign(item, stockOf.get(item.goodsId) ?? { stock: null, almostSoldOutAt: null });
  const switching = !view.current || view.current.campaignKey !== campaignKey;
  if (!switching || fillForm) view.current = campaign;
  else return; // an answer for a campaign that is no longer open
  if (fillForm) fillEditForm(campaign);
  renderCampaign();
}

function reloadCurrent(quiet) {
  if (!view.current) return Promise.resolve(undefined);
  const key = view.current.campaignKey;
  if (!quiet) return loadCampaign(key, false);
  return act(
    'Refreshing the campaign',
    () =>
      loadCampaign(key, false).catch((err) => {
        if (!isGone(err)) throw err;
        leaveDeletedCampaign(key);
      }),
    { quiet: true },
  );
}

function scheduleReload() {
  clearTimeout(view.reloadTimer);
  view.reloadTimer = setTimeout(() => void reloadCurrent(true), 250);
}

/**
 * The open campaign was deleted elsewhere (another operator, the API): said at once in the alert box, and
 * the page leaves it (no controls left that could only fail) and reads the list again.
 */
function leaveDeletedCampaign(campaignKey) {
  if (view.current?.campaignKey !== campaignKey) return;
  const title = view.current.title;
  clearTimeout(view.reloadTimer);
  clearInterval(view.viewerCountTimer);
  if (view.live) view.live.stop();
  Object.assign(view, { current: null, live: null, chat: [], filledForm: null });
  $('campaign').hidden = true;
  $('campaign').removeAttribute('data-campaign-key');
  history.replaceState(null, '', location.pathname);
  clearError();
  $('error-text').replaceChildren('The campaign “', bdi(title), '” was deleted (by another operator or through the API), so it is closed here.');
  $('error').hidden = false;
  renderCampaigns();
  void act('Reading the campaigns', () => loadCampaigns(view.page), { quiet: true });
}

/** A 404 for the open campaign: it is gone. */
function isGone(err) {
  return err instanceof ApiError && err.status === 404;
}

function fillEditForm(c) {
  $('edit-title').value = c.title;
  $('edit-scheduled').value = toLocalInput(c.scheduledAt);
  $('edit-scheduled-end').value = toLocalInput(c.scheduledEndAt);
  $('edit-operator').value = c.operatorName ?? '';
  $('edit-description').value = c.description ?? '';
  $('edit-visible').checked = Boolean(c.collectionVisible);
  $('edit-show-stock').checked = Boolean(c.showStock);
  view.filledForm = editFormInputs();
}

/** The settings form's inputs as they read now (to tell which the operator changed). */
function editFormInputs() {
  return {
    title: $('edit-title').value,
    scheduledAt: $('edit-scheduled').value,
    scheduledEndAt: $('edit-scheduled-end').value,
    operatorName: $('edit-operator').value,
    description: $('edit-description').value,
    collectionVisible: $('edit-visible').checked,
    showStock: $('edit-show-stock').checked,
  };
}

function renderCampaign() {
  const c = view.current;
  if (!c) return;
  $('campaign').hidden = false;
  $('campaign').dataset.campaignKey = c.campaignKey;
  $('campaign').dataset.status = c.campaignStatus;
  $('campaign-title').textContent = c.title;
  setPill($('campaign-status'), c.campaignStatus, { operator: true });
  $('campaign-key').textContent = c.campaignKey;
  $('campaign-viewers').textContent = `${c.userCount} watching now`;
  $('viewer-link').href = `/watch/${ak()}/${encodeURIComponent(c.campaignKey)}`;
  $('start-broadcast').disabled = c.campaignStatus !== 'READY';
  $('end-broadcast').disabled = c.campaignStatus !== 'ONAIR';
  const times = [];
  if (c.startedAt) times.push(`started ${formatDateTime(c.startedAt, locale)}`);
  if (c.endedAt) times.push(`ended ${formatDateTime(c.endedAt, locale)}`);
  if (!c.startedAt && c.scheduledAt) times.push(`scheduled ${formatDateTime(c.scheduledAt, locale)}`);
  $('campaign-times').textContent = times.join(' · ');
  $('pinned').hidden = !c.notice;
  $('pinned-text').textContent = c.notice ? c.notice.message : '';
  keepFocus(() => {
    renderCampaignGoods();
    renderSearch();
  });
}

function thumb(url, size) {
  return url
    ? el('img', { class: 'thumb', src: url, alt: '', width: size, height: size, loading: 'lazy' })
    : el('span', { class: 'thumb none', 'aria-hidden': 'true' }, 'No image');
}

/** A price the item has: the API answers 0 for one never set. */
function setPrice(value) {
  return value !== null && value !== undefined && Number(value) > 0 ? Number(value) : null;
}

function priceText(item, currency) {
  const parts = [];
  const discounted = setPrice(item.discountedPrice);
  const original = setPrice(item.originalPrice);
  const price = discounted ?? original;
  if (price !== null) parts.push(formatPrice(price, currency, locale));
  if (discounted !== null && original !== null && original > discounted) {
    parts.push(`(was ${formatPrice(original, currency, locale)})`);
  }
  const pct = formatPercent(item.discountPercentage, locale);
  if (pct) parts.push(`−${pct}`);
  return parts.join(' ');
}

const STATUS_BUTTON_CLASS = { ON_SALE: 'status-on-sale', ALMOST_SOLD_OUT: 'status-almost', SOLD_OUT: 'status-sold-out' };

function sortedGoods() {
  return [...(view.current ? (view.current.goods ?? []) : [])].sort((a, b) => a.sortOrder - b.sortOrder);
}

function renderCampaignGoods() {
  const items = sortedGoods();
  const rows = items.map((item, index) => {
    const id = item.goodsId;
    const statusButtons = Object.entries(SALES_STATUS).map(([status, meta]) =>
      el(
        'button',
        {
          type: 'button',
          class: STATUS_BUTTON_CLASS[status],
          'aria-pressed': item.salesStatus === status ? 'true' : 'false',
          dataset: { focus: `status:${id}:${status}`, status },
          onclick: (e) => setSalesStatus(item, status, e.currentTarget),
        },
        meta.label,
      ),
    );
    return el(
      'li',
      { class: `cg-row${item.showingNow ? ' showing' : ''}`, dataset: { focusRow: id, goodsId: id, status: item.salesStatus } },
      thumb(item.thumbnailUrl, 72),
      el(
        'div',
        { class: 'info' },
        el('strong', {}, bdi(item.name)),
        el('div', { class: 'small muted' }, joined(' · ', [item.brand && bdi(item.brand), item.sku && bdi(item.sku)])),
        el('div', { class: 'small' }, priceText(item, item.currency)),
        el('div', { class: 'row' }, salesBadge(item.salesStatus), item.showingNow ? el('span', { class: 'badge badge-showing' }, 'Showing now') : null),
        el('div', { class: 'small muted', dataset: { stock: id } }, stockText(item)),
      ),
      el(
        'div',
        { class: 'controls' },
        el('div', { class: 'group', role: 'group', 'aria-label': `Sales status of ${item.name}` }, statusButtons),
        el('span', { class: 'sep' }),
        stockForm(item),
        el('span', { class: 'sep' }),
        el(
          'button',
          {
            type: 'button',
            'aria-pressed': item.showingNow ? 'true' : 'false',
            'aria-label': `Showing now: ${item.name}`,
            dataset: { focus: `showing:${id}` },
            onclick: (e) => toggleShowing(item, e.currentTarget),
          },
          'Showing now',
        ),
        el(
          'button',
          {
            type: 'button',
            'aria-label': `Move ${item.name} up`,
            disabled: index === 0,
            dataset: { focus: `up:${id}` },
            onclick: (e) => move(item, -1, e.currentTarget),
          },
          '↑ Up',
        ),
        el(
          'button',
          {
            type: 'button',
            'aria-label': `Move ${item.name} down`,
            disabled: index === items.length - 1,
            dataset: { focus: `down:${id}` },
            onclick: (e) => move(item, 1, e.currentTarget),
          },
          '↓ Down',
        ),
        el(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Remove ${item.name} from the campaign`,
            dataset: { focus: `remove:${id}` },
            onclick: (e) => removeGoods(item, e.currentTarget),
          },
          'Remove',
        ),
      ),
    );
  });
  $('cg-list').replaceChildren(...rows);
  $('cg-empty').hidden = items.length > 0;
}

function stockText(item) {
  if (item.stock === null || item.stock === undefined) return 'Stock not tracked';
  const threshold = item.almostSoldOutAt === null || item.almostSoldOutAt === undefined ? '' : ` (almost sold out at ${item.almostSoldOutAt})`;
  return `Stock: ${item.stock} left${threshold}`;
}

/** Stock and threshold of one item (blank stock: not tracked; blank threshold: no almost-sold-out stage). */
function stockForm(item) {
  const id = item.goodsId;
  const input = (name, value) =>
    el('input', { type: 'number', min: '0', step: '1', class: 'stock-input', id: `${name}-${id}`, value: value ?? '', dataset: { focus: `${name}:${id}` } });
  const stock = input('stock', item.stock);
  const threshold = input('threshold', item.almostSoldOutAt);
  const submit = (event) => {
    event.preventDefault();
    void setStock(item, stock.value, threshold.value, event.submitter);
  };
  return el(
    'form',
    { class: 'group', 'aria-label': `Stock of ${item.name}`, onsubmit: submit },
    el('label', { for: `stock-${id}`, class: 'small' }, 'Stock'),
    stock,
    el('label', { for: `threshold-${id}`, class: 'small' }, 'Almost at'),
    threshold,
    el('button', { type: 'submit', 'aria-label': `Set the stock of ${item.name}` }, 'Set stock'),
  );
}

async function setStock(item, stockValue, thresholdValue, button) {
  const key = view.current.campaignKey;
  const body = {
    goodsId: Number(item.goodsId),
    stock: stockValue.trim() === '' ? null : Number(stockValue),
    almostSoldOutAt: thresholdValue.trim() === '' ? null : Number(thresholdValue),
    notify: $('status-notify').checked,
  };
  await act(
    `Setting the stock of ${item.name}`,
    async () => {
      const answer = await api('PUT', `/v1/goods/${ak()}/campaign/${encodeURIComponent(key)}/stock/id`, body);
      flash(bdi(item.name), `: ${stockText(answer)}, ${SALES_STATUS[answer.salesStatus].label}`);
      await reloadCurrent(false);
    },
    { button },
  );
}

function goodsUrl(key) {
  return `/v1/goods/${ak()}/campaign/${encodeURIComponent(key)}/salesStatus/id`;
}

async function setSalesStatus(item, status, button) {
  const key = view.current.campaignKey;
  const notify = $('status-notify').checked;
  const body = { goodsId: Number(item.goodsId), salesStatus: status, notify };
  const notice = $('status-notice').value.trim();
  const chat = $('status-chat').value.trim();
  if (notice) body.adminChatNotice = notice;
  if (chat) body.chatMessage = chat;
  const label = SALES_STATUS[status].label;
  await act(
    `Setting ${item.name} to ${label}`,
    async () => {
      await api('PUT', goodsUrl(key), body);
      $('status-notice').value = '';
      $('status-chat').value = '';
      flash(bdi(item.name), `: ${label}${notify ? '' : ' (viewers not notified)'}`);
      await reloadCurrent(false);
    },
    { button },
  );
}

async function toggleShowing(item, button) {
  const key = view.current.campaignKey;
  await act(
    `Marking ${item.name}`,
    async () => {
      await api('PUT', `${campaignPath(key)}/goods/${encodeURIComponent(item.goodsId)}/showing`, { showingNow: !item.showingNow });
      flash(bdi(item.name), item.showingNow ? ' is no longer showing' : ' is showing now');
      await reloadCurrent(false);
    },
    { button },
  );
}

async function move(item, delta, button) {
  const key = view.current.campaignKey;
  const ids = sortedGoods().map((g) => Number(g.goodsId));
  const from = ids.indexOf(Number(item.goodsId));
  const to = from + delta;
  if (from < 0 || to < 0 || to >= ids.length) return;
  [ids[from], ids[to]] = [ids[to], ids[from]];
  await act(
    `Moving ${item.name}`,
    async () => {
      await api('PUT', `${campaignPath(key)}/goods/order`, { goodsIds: ids });
      flash('Moved ', bdi(item.name), ` ${delta < 0 ? 'up' : 'down'} (position ${to + 1} of ${ids.length})`);
      await reloadCurrent(false);
    },
    { button },
  );
}

async function removeGoods(item, button) {
  const key = view.current.campaignKey;
  await act(
    `Removing ${item.name}`,
    async () => {
      await api('DELETE', `${campaignPath(key)}/goods/${encodeURIComponent(item.goodsId)}`);
      flash('Removed ', bdi(item.name), ' from the campaign');
      await reloadCurrent(false);
    },
    { button },
  );
}

async function setStatus(campaignStatus, button) {
  const c = view.current;
  if (campaignStatus === 'CLOSED' && !window.confirm(`End "${c.title}" (ONAIR → CLOSED)? Viewers see that it has ended, and it cannot go on air again.`))
    return;
  await act(
    campaignStatus === 'ONAIR' ? 'Starting the broadcast' : 'Ending the broadcast',
    async () => {
      await api('PUT', `${campaignPath(c.campaignKey)}/status`, { campaignStatus });
      flash(campaignStatus === 'ONAIR' ? 'The broadcast is ONAIR (live)' : 'The broadcast is CLOSED (ended)');
      await reloadCurrent(false);
      await loadCampaigns(view.page);
    },
    { button },
  );
}

// ------------------------------------------------------------------ catalog search

async function search(page) {
  const keyword = $('search-keyword').value.trim();
  const params = new URLSearchParams({ page: String(page), count: String(SEARCH_PAGE) });
  if (keyword) params.set('searchKeyword', keyword);
  const data = await api('GET', `/v1/goods/${ak()}?${params}`);
  Object.assign(view.search, { keyword, page, total: data.totalCount, results: data.results, done: true });
  keepFocus(renderSearch);
}

function renderSearch() {
  const s = view.search;
  if (!s.done) return;
  const inCampaign = new Set((view.current ? (view.current.goods ?? []) : []).map((g) => String(g.goodsId)));
  const items = s.results.map((g) => {
    const added = inCampaign.has(String(g.id));
    const media = g.medias && g.medias[0];
    const small = media && media.thumbnails && media.thumbnails[0] ? media.thumbnails[0].imageUrl : null;
    return el(
      'li',
      { dataset: { focusRow: `search:${g.id}`, goodsId: g.id } },
      thumb(small, 48),
      el(
        'div',
        { class: 'info' },
        el('strong', {}, bdi(g.name)),
        el('div', { class: 'small muted' }, joined(' · ', [g.brand && bdi(g.brand), g.sku && bdi(g.sku), priceText(g, g.currency)])),
      ),
      el(
        'button',
        {
          type: 'button',
          'aria-label': added ? `${g.name} is in the campaign` : `Add ${g.name} to the campaign`,
          disabled: added,
          dataset: { focus: `add:${g.id}` },
          onclick: (e) => addGoods(g, e.currentTarget),
        },
        added ? 'Added' : 'Add',
      ),
    );
  });
  $('search-results').replaceChildren(...items);
  const pages = Math.max(1, Math.ceil(s.total / SEARCH_PAGE));
  $('search-summary').textContent = s.total
    ? `${s.total} match${s.total === 1 ? '' : 'es'}${s.keyword ? ` for “${s.keyword}”` : ''} · page ${s.page} of ${pages}`
    : `Nothing matches${s.keyword ? ` “${s.keyword}”` : ''}.`;
  $('search-prev').hidden = s.page <= 1;
  $('search-next').hidden = s.page >= pages;
}

async function addGoods(goods, button) {
  const key = view.current.campaignKey;
  await act(
    `Adding ${goods.name}`,
    async () => {
      await api('POST', `${campaignPath(key)}/goods`, { goodsIds: [Number(goods.id)] });
      flash('Added ', bdi(goods.name), ' to the campaign');
      await reloadCurrent(false);
    },
    { button },
  );
}

// ------------------------------------------------------------------ notice and chat (live)

function renderChatLog() {
  const lines = view.chat
    .slice(-50)
    .map((line) =>
      el(
        'li',
        {},
        el('strong', {}, bdi(line.adminName || 'Host'), ': '),
        el('bdi', { class: 'text' }, line.message),
        el('span', { class: 'muted small' }, ` ${formatTime(line.createdAt, locale)}`),
      ),
    );
  const log = $('chat-log');
  log.replaceChildren(...lines);
  log.scrollTop = log.scrollHeight;
}

/** Reads the open campaign's viewer count again (while the page is seen); failures wait for the next turn. */
async function refreshViewerCount(campaignKey) {
  if (document.hidden || view.current?.campaignKey !== campaignKey) return;
  try {
    const campaign = await api('GET', campaignPath(campaignKey));
    if (view.current?.campaignKey !== campaignKey) return;
    view.current.userCount = campaign.userCount;
    $('campaign-viewers').textContent = `${campaign.userCount} watching now`;
  } catch (err) {
    // Deleted meanwhile: leave it. Otherwise the next turn asks again; the campaign's own errors show
    // when the operator acts on it.
    if (isGone(err)) leaveDeletedCampaign(campaignKey);
  }
}

function connectLive(campaignKey) {
  clearInterval(view.viewerCountTimer);
  view.viewerCountTimer = setInterval(() => void refreshViewerCount(campaignKey), VIEWER_COUNT_MS);
  if (view.live) view.live.stop();
  view.chat = [];
  renderChatLog();
  const indicator = $('campaign-live');
  const show = (state) => {
    indicator.dataset.state = state;
    indicator.textContent = { connecting: 'Connecting…', live: 'Live updates on', reconnecting: 'Reconnecting…', offline: 'Live updates off' }[state] ?? state;
  };
  if (typeof io !== 'function') {
    show('offline');
    view.live = null;
    return;
  }
  view.live = new LiveClient({
    accessKey: session.accessKey,
    campaignKey,
    role: 'operator',
    token: session.token,
    onSnapshot: (snapshot) => {
      view.chat = snapshot.chat.slice();
      renderChatLog();
      scheduleReload();
    },
    onEvent: (type, payload) => {
      if (type === 'chat.message') {
        view.chat.push(payload);
        if (view.chat.length > 200) view.chat.splice(0, view.chat.length - 200);
        renderChatLog();
      }
      if (type === 'campaign.status' && payload.campaignStatus === 'NOT_EXIST') {
        leaveDeletedCampaign(campaignKey);
        return;
      }
      // Another operator (or another tab) may have changed things: bring the campaign up to date.
      if (type !== 'chat.message') scheduleReload();
    },
    onConnection: (state, detail) => {
      show(state);
      // The operator role refused as the channel reconnects (the server ends an operator's socket when its
      // token stops being valid): stop asking with it, and offer to paste a fresh one, as a 401 of the API does.
      const refused = /^role 'operator': (.*)$/.exec(state === 'offline' ? (detail ?? '') : '');
      if (refused && session.token) {
        view.live?.stop();
        showError('Live updates', new ApiError(401, { _s: -102, _e: refused[1] }, refused[1]));
      }
      // The channel refused to join: the campaign may be gone (a deletion whose event was missed).
      if (state === 'offline' && !refused && /not found/i.test(detail ?? '')) void reloadCurrent(true);
    },
    onOperatorEvent: (type, payload) => {
      if (type === 'import.progress') showImport(payload);
    },
  }).start();
}

// ------------------------------------------------------------------ spreadsheet import jobs

/**
 * The import job the page follows: its progress comes from the operator socket (when a campaign is open)
 * and from polling. A poll that fails (the service restarting, a network hiccup) is tried again, later
 * each time (up to IMPORT_POLL_MAX_MS); the failure shown meanwhile goes as soon as the job is read again.
 * Only a job that is gone (404) ends the polling before the job ends.
 */
const importing = { jobId: null, pollTimer: null, pollDelay: 0, errorText: null };
const IMPORT_POLL_MS = 1000;
const IMPORT_POLL_MAX_MS = 16_000;

function showImport(job) {
  if (job.jobId !== importing.jobId) return;
  clearImportError();
  const bar = $('import-progress');
  const total = job.rowsTotal;
  const finished = job.state === 'succeeded' || job.state === 'failed';
  if (total) {
    bar.value = Math.round((Math.min(job.rowsDone, total) / total) * 100);
  } else if (finished) {
    bar.value = 100;
  } else {
    bar.removeAttribute('value'); // indeterminate until the job has counted the rows
  }
  const percent = bar.hasAttribute('value') ? `${bar.value} %` : '';
  const label = { queued: 'Queued', running: 'Importing', succeeded: 'Import finished', failed: 'Import failed' }[job.state] ?? job.state;
  $('import-label').textContent = `${label}${percent ? `: ${percent}` : ''}`;
  bar.setAttribute('aria-valuetext', `${label} ${percent}`.trim());
  const rows = total ? `${job.rowsDone.toLocaleString(locale)} of ${total.toLocaleString(locale)} rows` : `${job.rowsDone.toLocaleString(locale)} rows`;
  $('import-counts').textContent =
    `${rows} · ${job.createCount.toLocaleString(locale)} created · ${job.updateCount.toLocaleString(locale)} updated · ${job.failCount.toLocaleString(locale)} failed` +
    (job.error ? ` · ${job.error}` : '');
  $('import-failures').hidden = !(finished && job.failCount > 0);
  if (finished) stopImportPolling();
}

/** The failure of a poll, shown in the alert box until the job is read again (unless another error replaced it). */
function clearImportError() {
  if (importing.errorText !== null && $('error-text').textContent === importing.errorText) clearError();
  importing.errorText = null;
}

function stopImportPolling() {
  if (importing.pollTimer) clearTimeout(importing.pollTimer);
  importing.pollTimer = null;
}

/** The next poll in `delay` ms (one at a time: each poll schedules the next when it is done). */
function scheduleImportPoll(delay) {
  stopImportPolling();
  importing.pollDelay = delay;
  importing.pollTimer = setTimeout(() => void pollImport(), delay);
}

async function pollImport() {
  const jobId = importing.jobId;
  if (jobId === null) return;
  importing.pollTimer = null;
  try {
    const job = await api('GET', `/v1/goods/${ak()}/excel/jobs/${jobId}?count=1`);
    if (importing.jobId !== jobId) return;
    showImport(job);
    if (job.state !== 'succeeded' && job.state !== 'failed') scheduleImportPoll(IMPORT_POLL_MS);
  } catch (err) {
    if (importing.jobId !== jobId) return;
    showError('Reading the import job', err);
    if (err instanceof ApiError && err.status === 404) {
      importing.errorText = null;
      return; // the job is gone: nothing more to follow
    }
    const delay = Math.min(Math.max(importing.pollDelay, IMPORT_POLL_MS) * 2, IMPORT_POLL_MAX_MS);
    $('error-text').textContent += ` Trying again in ${Math.round(delay / 1000)} s.`;
    importing.errorText = $('error-text').textContent;
    scheduleImportPoll(delay);
  }
}

async function startImport(event) {
  event.preventDefault();
  const file = $('import-file').files[0];
  if (!file) return;
  stopImportPolling();
  importing.jobId = null;
  const bar = $('import-progress');
  bar.removeAttribute('value');
  $('import-label').textContent = 'Uploading…';
  $('import-counts').textContent = '';
  $('import-failures').hidden = true;
  $('import-status').hidden = false;
  await act(
    'Uploading the spreadsheet',
    async () => {
      const form = new FormData();
      form.append('file', file, file.name);
      const res = await fetch(`/v1/goods/${ak()}/excel?async=true`, { method: 'POST', headers: { Authorization: `Bearer ${session.token}` }, body: form });
      const data = await answerOf(res);
      importing.jobId = data.jobId;
      importing.errorText = null;
      showImport(data);
      if (data.state !== 'succeeded' && data.state !== 'failed') scheduleImportPoll(IMPORT_POLL_MS);
    },
    { button: $('import-submit') },
  );
}

async function downloadFailures() {
  const jobId = importing.jobId;
  await act('Downloading the failed rows', async () => {
    const res = await fetch(`/v1/goods/${ak()}/excel/jobs/${jobId}/failures.csv`, { headers: { Authorization: `Bearer ${session.token}` } });
    if (!res.ok) throw new ApiError(res.status, null, res.statusText);
    const url = URL.createObjectURL(await res.blob());
    const link = el('a', { href: url, download: `import-job-${jobId}-failures.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
}

async function postChat(pinned, button) {
  const key = view.current.campaignKey;
  const message = $('chat-message').value.trim();
  if (!message) {
    showError(pinned ? 'Pinning the notice' : 'Sending the chat line', new Error('Write a message first.'));
    $('chat-message').focus();
    return;
  }
  await act(
    pinned ? 'Pinning the notice' : 'Sending the chat line',
    async () => {
      await api('POST', `${campaignPath(key)}/chat`, { message, pinned });
      $('chat-message').value = '';
      flash(pinned ? 'Notice pinned' : 'Chat line sent');
      if (pinned) await reloadCurrent(false);
    },
    { button },
  );
}

async function unpin(button) {
  const key = view.current.campaignKey;
  await act(
    'Unpinning the notice',
    async () => {
      await api('POST', `${campaignPath(key)}/chat`, { message: '', pinned: true });
      flash('Notice unpinned');
      await reloadCurrent(false);
    },
    { button },
  );
}

// ------------------------------------------------------------------ wiring

function submitter(event) {
  return event.submitter || event.target.querySelector('button[type="submit"]');
}

$('error-close').addEventListener('click', clearError);
$('renew-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void act(
    'Using the fresh token',
    async () => {
      await renewToken($('renew-token').value);
      flash('Token renewed');
      $('main').focus();
    },
    { button: submitter(event), quiet: true },
  );
});
$('sign-out').addEventListener('click', signOut);

$('signin-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void act(
    'Signing in',
    async () => {
      await signIn($('signin-access-key').value, $('signin-token').value);
      $('main').focus();
    },
    { button: submitter(event) },
  );
});

$('campaigns-refresh').addEventListener('click', (e) => void act('Loading the campaigns', () => loadCampaigns(view.page), { button: e.currentTarget }));
$('campaigns-prev').addEventListener('click', (e) => void act('Loading the campaigns', () => loadCampaigns(view.page - 1), { button: e.currentTarget }));
$('campaigns-next').addEventListener('click', (e) => void act('Loading the campaigns', () => loadCampaigns(view.page + 1), { button: e.currentTarget }));

$('import-form').addEventListener('submit', (event) => void startImport(event));
$('import-failures').addEventListener('click', () => void downloadFailures());

$('create-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const body = { title: $('create-title').value, collectionVisible: $('create-visible').checked };
  const scheduledAt = fromLocalInput($('create-scheduled').value);
  if (scheduledAt) body.scheduledAt = scheduledAt;
  const operatorName = $('create-operator').value.trim();
  if (operatorName) body.operatorName = operatorName;
  void act(
    'Creating the campaign',
    async () => {
      const created = await api('POST', campaignsPath(), body);
      event.target.reset();
      flash('Created “', bdi(created.title), '”');
      await loadCampaigns(1);
      await openCampaign(created.campaignKey, true);
    },
    { button: submitter(event) },
  );
});

$('edit-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = view.current.campaignKey;
  // Only what the operator changed is sent: the inputs hold whole minutes, and a schedule set through the
  // API to the second would otherwise be moved (and every viewer told) by saving an edit of another field.
  const inputs = editFormInputs();
  const read = {
    title: (v) => v,
    scheduledAt: fromLocalInput,
    scheduledEndAt: fromLocalInput,
    operatorName: (v) => v.trim() || null,
    description: (v) => (v.trim() ? v : null),
    collectionVisible: (v) => v,
    showStock: (v) => v,
  };
  const body = {};
  for (const [field, value] of Object.entries(inputs)) if (value !== view.filledForm?.[field]) body[field] = read[field](value);
  if (!Object.keys(body).length) {
    flash('Nothing changed');
    return;
  }
  void act(
    'Saving the settings',
    async () => {
      await api('PATCH', campaignPath(key), body);
      await loadCampaign(key, true);
      await loadCampaigns(view.page);
      flash('Settings saved');
    },
    { button: submitter(event) },
  );
});

$('start-broadcast').addEventListener('click', (e) => void setStatus('ONAIR', e.currentTarget));
$('end-broadcast').addEventListener('click', (e) => void setStatus('CLOSED', e.currentTarget));

// ------------------------------------------------------------------ catalog export

/** The file name the service gives in Content-Disposition, else a fallback. */
function downloadName(res, format) {
  const match = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') || '');
  return match ? match[1] : `goods.${format}`;
}

/** Downloads the catalog export (the token goes in a header, so the file is fetched, then saved). */
async function exportCatalog(format) {
  const buttons = [$('export-xlsx'), $('export-csv')];
  buttons.forEach((b) => (b.disabled = true));
  $('export-status').textContent = `Exporting the catalog as ${format === 'csv' ? 'CSV' : '.xlsx'}…`;
  clearError();
  try {
    const res = await fetch(`/v1/goods/${ak()}/excel/export?format=${format}`, { headers: { Authorization: `Bearer ${session.token}` }, cache: 'no-store' });
    if (!res.ok) await answerOf(res);
    const blob = await res.blob();
    const link = el('a', { href: URL.createObjectURL(blob), download: downloadName(res, format) });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
    $('export-status').textContent = `Saved ${link.download} (${Math.max(1, Math.round(blob.size / 1024)).toLocaleString(locale)} kB).`;
  } catch (err) {
    $('export-status').textContent = '';
    showError('Export', err);
  } finally {
    buttons.forEach((b) => (b.disabled = false));
  }
}

$('export-xlsx').addEventListener('click', () => exportCatalog('xlsx'));
$('export-csv').addEventListener('click', () => exportCatalog('csv'));

$('search-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void act('Searching the catalog', () => search(1), { button: submitter(event) });
});
$('search-prev').addEventListener('click', (e) => void act('Searching the catalog', () => search(view.search.page - 1), { button: e.currentTarget }));
$('search-next').addEventListener('click', (e) => void act('Searching the catalog', () => search(view.search.page + 1), { button: e.currentTarget }));

$('chat-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void postChat(false, submitter(event));
});
$('pin-notice').addEventListener('click', (e) => void postChat(true, e.currentTarget));
$('unpin').addEventListener('click', (e) => void unpin(e.currentTarget));

// Start: the access key from ?accessKey= or from this tab's session; sign in again silently when both are there.
(() => {
  const saved = (() => {
    try {
      return JSON.parse(sessionStorage.getItem(STORE) || 'null');
    } catch {
      return null;
    }
  })();
  const fromQuery = new URLSearchParams(location.search).get('accessKey');
  $('signin-access-key').value = fromQuery || (saved && saved.accessKey) || '';
  if (saved && saved.accessKey && saved.token && (!fromQuery || fromQuery === saved.accessKey)) {
    void act('Signing in', async () => {
      await signIn(saved.accessKey, saved.token);
      const key = decodeURIComponent(location.hash.slice(1));
      if (key) await openCampaign(key, false);
    });
  } else {
    ($('signin-access-key').value ? $('signin-token') : $('signin-access-key')).focus();
  }
})();

window.livegoodsConsole = { view };
