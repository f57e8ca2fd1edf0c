/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests: every line must be
 * a `# HELP`, a `# TYPE`, another comment, a sample, or empty; anything else throws with its line number. Beyond
 * the syntax it checks what a scraper relies on: one TYPE per family, given before its samples; a family's
 * samples together; sample names that belong to their family (`_bucket`/`_sum`/`_count` for histograms);
 * no series twice; counters never negative; histogram buckets with `le`, cumulative, ending at `+Inf`
 * equal to `_count`.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: MetricType;
  help?: string;
  samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?[ \\t]+(\\S+)(?:[ \\t]+(-?\\d+))?$`);
const TYPES: MetricType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];

function parseValue(text: string, where: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`${where}: bad value ${JSON.stringify(text)}`);
  return Number(text);
}

function parseLabels(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  const re = new RegExp(`^(${LABEL})="`);
  while (i < text.length) {
    const m = re.exec(text.slice(i));
    if (!m) throw new Error(`${where}: bad label at ${JSON.stringify(text.slice(i))}`);
    i += m[0].length;
    let value = '';
    for (;;) {
      if (i >= text.length) throw new Error(`${where}: unterminated label value`);
      const c = text[i];
      if (c === '"') break;
      if (c === '\\') {
        const next = text[i + 1];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`${where}: bad escape \\${next}`);
        i += 2;
        continue;
      }
      value += c;
      i += 1;
    }
    i += 1; // closing quote
    if (m[1] in labels) throw new Error(`${where}: label ${m[1]} twice`);
    labels[m[1]] = value;
    if (text[i] === ',') i += 1;
    else if (i < text.length) throw new Error(`${where}: expected , after label ${m[1]}`);
  }
  return labels;
}

function familyOf(sampleName: string, families: Map<string, Family>): Family | undefined {
  const exact = families.get(sampleName);
  if (exact) return exact;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sampleName.endsWith(suffix)) continue;
    const family = families.get(sampleName.slice(0, -suffix.length));
    if (family && (family.type === 'histogram' || (family.type === 'summary' && suffix !== '_bucket'))) return family;
  }
  return undefined;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const finished = new Set<string>();
  const seen = new Set<string>();
  let current: Family | undefined;
  if (text.length && !text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const lines = text.split('\n');
  lines.pop();
  lines.forEach((line, index) => {
    const where = `line ${index + 1}`;
    if (line === '') return; // the format ignores empty lines
    if (line.startsWith('#')) {
      const m = new RegExp(`^# (HELP|TYPE) (${NAME})(?: (.*))?$`).exec(line);
      if (!m) return; // a plain comment
      const [, kind, name, rest = ''] = m;
      let family = families.get(name);
      if (!family) {
        if (finished.has(name)) throw new Error(`${where}: family ${name} appears twice`);
        family = { name, type: 'untyped', samples: [] };
        families.set(name, family);
      }
      if (current && current !== family) finished.add(current.name);
      current = family;
      if (kind === 'HELP') {
        if (family.help !== undefined) throw new Error(`${where}: second HELP for ${name}`);
        family.help = rest;
      } else {
        if (!TYPES.includes(rest as MetricType)) throw new Error(`${where}: bad type ${rest}`);
        if (family.samples.length) throw new Error(`${where}: TYPE of ${name} after its samples`);
        if ((family as Family & { typed?: boolean }).typed) throw new Error(`${where}: second TYPE for ${name}`);
        family.type = rest as MetricType;
        (family as Family & { typed?: boolean }).typed = true;
      }
      return;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`${where}: not a sample: ${JSON.stringify(line)}`);
    const [, name, labelText = '', valueText] = m;
    const labels = parseLabels(labelText, where);
    const value = parseValue(valueText, where);
    const family = familyOf(name, families);
    if (!family) throw new Error(`${where}: sample ${name} of no declared family`);
    if (family !== current) throw new Error(`${where}: samples of ${family.name} are not together`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`${where}: series ${key} twice`);
    seen.add(key);
    if (family.type === 'counter' && !(value >= 0)) throw new Error(`${where}: counter ${name} is ${value}`);
    if (family.type === 'histogram' && name.endsWith('_bucket') && labels.le === undefined) throw new Error(`${where}: bucket without le`);
    family.samples.push({ name, labels, value });
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name.endsWith('_bucket')) entry.buckets.push([parseValue(le, family.name), s.value]);
    else if (s.name.endsWith('_count')) entry.count = s.value;
  }
  for (const [key, { buckets, count }] of series) {
    const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i += 1) {
      if (sorted[i][1] < sorted[i - 1][1]) throw new Error(`${family.name}${key}: buckets not cumulative`);
    }
    const last = sorted[sorted.length - 1];
    if (!last || last[0] !== Infinity) throw new Error(`${family.name}${key}: no +Inf bucket`);
    if (last[1] !== count) throw new Error(`${family.name}${key}: +Inf bucket ${last[1]} != count ${count}`);
  }
}

/** The value of one series (labels must match exactly the given ones, among others); undefined when absent. */
export function valueOf(families: Map<string, Family>, sampleName: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name === sampleName && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}

/** Sum of every series of a sample name matching the labels. */
export function sumOf(families: Map<string, Family>, sampleName: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const family of families.values()) {
    for (const s of family.samples) if (s.name === sampleName && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}
