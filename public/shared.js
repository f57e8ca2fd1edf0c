// Small helpers shared by the console and the viewer page (plain ES module, no build step).

/**
 * Creates an element: el('button', {type: 'button', class: 'x', onclick: fn, dataset: {k: 'v'}}, 'text', child).
 * Attribute values are set as attributes (or properties for value/checked/disabled/hidden); text children
 * become text nodes, so nothing is ever parsed as HTML.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'hidden') node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/**
 * Text a user wrote (a name, brand, goods code, title, chat line, notice), isolated from the text around
 * it: a right-to-left override (U+202E) or any right-to-left script in it cannot reorder its neighbours
 * (a price, a goods code, a time) on screen.
 */
export function bdi(text) {
  return el('bdi', {}, text);
}

/** Parts (nodes or strings; empty ones left out) with `separator` between them. */
export function joined(separator, parts) {
  const kept = parts.filter((part) => part !== undefined && part !== null && part !== false && part !== '');
  return kept.flatMap((part, index) => (index ? [separator, part] : [part]));
}

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** The locale to format with: ?locale=ko-KR when given and valid, else the browser's. */
export function pageLocale() {
  const asked = new URLSearchParams(location.search).get('locale');
  for (const candidate of [asked, navigator.language, 'en']) {
    if (!candidate) continue;
    try {
      return Intl.getCanonicalLocales(candidate)[0];
    } catch {
      // not a locale tag: try the next one
    }
  }
  return 'en';
}

const priceFormats = new Map();

/** A price in the customer's currency for the viewer's locale (KRW without decimals, USD with two, ...). */
export function formatPrice(value, currency, locale) {
  if (value === null || value === undefined || value === '') return '';
  const key = `${locale}|${currency}`;
  let format = priceFormats.get(key);
  if (!format) {
    try {
      format = new Intl.NumberFormat(locale, { style: 'currency', currency: currency || 'KRW' });
    } catch {
      format = { format: (n) => `${n} ${currency}` };
    }
    priceFormats.set(key, format);
  }
  return format.format(Number(value));
}

/**
 * "10%" for a discountPercentage (up to one decimal), '' when there is none. The decimal is cut, not
 * rounded: 99.99 reads "99.9%", never a "100%" the price does not give.
 */
export function formatPercent(value, locale) {
  if (value === null || value === undefined || Number(value) <= 0) return '';
  return new Intl.NumberFormat(locale, { maximumFractionDigits: 1, roundingMode: 'trunc' }).format(Number(value)) + '%';
}

export function formatTime(ms, locale) {
  if (!ms) return '';
  return new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit' }).format(new Date(ms));
}

export function formatDateTime(ms, locale) {
  if (!ms) return '';
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(ms));
}

/** Sales statuses: the badge text and its CSS class. */
export const SALES_STATUS = {
  ON_SALE: { label: 'On sale', className: 'badge-on-sale' },
  ALMOST_SOLD_OUT: { label: 'Almost sold out', className: 'badge-almost' },
  SOLD_OUT: { label: 'Sold out', className: 'badge-sold-out' },
};

export function salesStatusOf(status) {
  return SALES_STATUS[status] ?? { label: String(status), className: 'badge-unknown' };
}

/**
 * Campaign statuses: the label viewers read and its CSS class. The console shows the API's own value
 * with it ("ONAIR (live)"), so operators read the vocabulary of the API and the README.
 */
export const CAMPAIGN_STATUS = {
  READY: { label: 'Upcoming', className: 'pill-ready' },
  ONAIR: { label: 'Live', className: 'pill-onair' },
  CLOSED: { label: 'Ended', className: 'pill-closed' },
  NOT_EXIST: { label: 'Not found', className: 'pill-closed' },
};

export function campaignStatusOf(status) {
  return CAMPAIGN_STATUS[status] ?? { label: String(status), className: 'pill-closed' };
}

/** A badge element for a sales status (data-status carries the raw value). */
export function salesBadge(status) {
  const s = salesStatusOf(status);
  return el('span', { class: `badge ${s.className}`, dataset: { status } }, s.label);
}

/** The console's wording of a campaign status: the API value, then the viewers' word ("READY (upcoming)"). */
export function operatorStatusLabel(status) {
  return `${status} (${campaignStatusOf(status).label.toLowerCase()})`;
}

/** Fills a status pill; `{ operator: true }` (the console) shows the API value with the viewers' word. */
export function setPill(node, status, { operator = false } = {}) {
  const s = campaignStatusOf(status);
  node.className = `pill ${s.className}${operator ? ' pill-operator' : ''}`;
  node.dataset.status = status;
  node.textContent = operator ? operatorStatusLabel(status) : s.label;
}

/** Keeps keyboard focus across a re-render: elements carry data-focus keys. */
export function keepFocus(render) {
  const active = document.activeElement;
  const key = active && active.dataset ? active.dataset.focus : undefined;
  const row = active && active.closest ? active.closest('[data-focus-row]')?.dataset.focusRow : undefined;
  render();
  if (!key || (document.activeElement && document.activeElement.dataset && document.activeElement.dataset.focus === key)) return;
  const again = document.querySelector(`[data-focus="${CSS.escape(key)}"]`);
  if (again && !again.disabled) {
    again.focus();
    return;
  }
  if (row) {
    const fallback = document.querySelector(`[data-focus-row="${CSS.escape(row)}"] button:not([disabled])`);
    if (fallback) fallback.focus();
  }
}
