import { SheetError } from './sheet-error';
import { columnIndex, columnName } from './sheet-rows';

/** Most characters an Excel cell holds (Excel's own limit; no goods field takes more than 10,000). */
export const MAX_CELL_CHARS = 32_767;
/**
 * Most characters the text of one cell or shared string may take in the XML, an entity (`&amp;`) counted
 * as one: a `_xHHHH_` escape (a carriage return, a control character) is 7 characters for one, so a cell
 * of 32,767 characters never takes more. The decoded text is checked against MAX_CELL_CHARS after.
 */
export const MAX_XML_TEXT_CHARS = MAX_CELL_CHARS * 7;
/** Most characters of one tag, comment or processing instruction (a real sheet's are a few hundred at most). */
export const MAX_XML_MARKUP_CHARS = 64 * 1024;
/** Columns of an Excel sheet: A to XFD. */
export const MAX_COLUMNS = 16_384;
/**
 * Most elements open at once in a workbook part. A worksheet nests a handful (worksheet, sheetData, row,
 * c, is, r, t); the XML parser keeps a stack of the open ones, which for 10,000,000 nested unknown
 * elements in a row (a 70 KB file) took gigabytes.
 */
export const MAX_XML_DEPTH = 64;
/**
 * Most rich-text runs (`<r>`) of one shared string: a run shows at least one character, so a real one has
 * at most as many as a cell has characters. exceljs keeps each run of the string it reads as an object
 * (with its font): one string of 9,000,000 empty runs (a 480 KB file) took 1.2 GB.
 */
export const MAX_RICH_TEXT_RUNS = MAX_CELL_CHARS;
/** An entity longer than this is no entity (the XML parser refuses it): its characters count one by one. */
const MAX_ENTITY_CHARS = 16;

/** `other`: a part whose tags mean nothing to the guard (the sheet's relationships), bounded all the same. */
export type XmlPart = 'sheet' | 'sharedStrings' | 'other';

const fmt = (n: number) => n.toLocaleString('en-US');

/** Opening or closing tag: its local name (a namespace prefix dropped) and where its attributes start. */
const TAG_NAME = /^<(\/?)(?:[\w.-]+:)?([\w.-]+)/;

/**
 * Whether the elements from `from` to `to` close all they open (tags counted: `<x`, `</x`, `/>`), so
 * that the depth after them is the depth before. Within one chunk they may nest at most a few thousand.
 */
function balanced(xml: string, from: number, to: number): boolean {
  let open = 0;
  for (let at = xml.indexOf('<', from); at >= 0 && at < to; at = xml.indexOf('<', at + 1)) open += xml.charCodeAt(at + 1) === 0x2f /* / */ ? -1 : 1;
  for (let at = xml.indexOf('/>', from); at >= 0 && at < to; at = xml.indexOf('/>', at + 2)) open -= 1;
  return open === 0;
}

/**
 * Whether the sheet XML from `from` (a row tag) up to `to` (the next chunk part's first row tag) is only
 * what the guard lets through unchanged: no comment, CDATA, processing instruction or prefixed name, every
 * row and cell tag with its reference first (`<row r="…`, `<c r="…`, as Excel and exceljs write them), each
 * cell's within column XFD and, once the header is known (`kept`), in a column of the header and not
 * empty (`<c …/>`); every element closed within it. Such a stretch holds no text or tag near a bound (it
 * is part of one chunk, and a cell or row starts and ends in it), so nothing else needs counting.
 */
function plainRows(xml: string, from: number, to: number, kept: Uint8Array | undefined): boolean {
  const within = (at: number) => at >= 0 && at < to;
  if (within(xml.indexOf('<!', from)) || within(xml.indexOf('<?', from))) return false;
  if (!balanced(xml, from, to)) return false;
  if (within(xml.indexOf(':c ', from)) || within(xml.indexOf(':c>', from)) || within(xml.indexOf(':row', from))) return false;
  if (!xml.startsWith('<row r="', to)) return false;
  for (let at = from; within(at); at = xml.indexOf('<row', at + 4)) if (!xml.startsWith('<row r="', at)) return false;
  for (let at = xml.indexOf('<c', from); within(at); at = xml.indexOf('<c', at + 2)) {
    const next = xml.charCodeAt(at + 2);
    // <col, <cfRule…: other tags. A cell without its reference first goes the long way.
    if (next !== 0x20 && next !== 0x3e /* > */ && next !== 0x2f /* / */ && next > 0x20) continue;
    if (!xml.startsWith('<c r="', at)) return false;
    let column = 0;
    let k = at + 6;
    for (; k < at + 10; k++) {
      const c = xml.charCodeAt(k) & ~0x20; // upper case
      if (c < 0x41 || c > 0x5a) break;
      column = column * 26 + (c - 0x40);
    }
    const digit = xml.charCodeAt(k);
    // One to three letters within XFD, then the row's digits.
    if (k === at + 6 || column > MAX_COLUMNS || !(digit >= 0x30 && digit <= 0x39)) return false;
    if (kept && (!kept[column - 1] || xml.charCodeAt(xml.indexOf('>', k) - 1) === 0x2f) /* / */) return false;
  }
  return true;
}

/**
 * The shared strings (`<si>`) from `from` up to `to` (both at an `<si`) when that stretch holds only what
 * the guard lets through unchanged: no comment, CDATA, processing instruction or prefixed name (each
 * string starts and ends in it, so none is near a bound: a stretch too short to hold MAX_RICH_TEXT_RUNS
 * runs, `<r/>`, can hold no string with more); -1 otherwise.
 */
function plainStrings(xml: string, from: number, to: number): number {
  const within = (at: number) => at >= 0 && at < to;
  if (to - from > MAX_RICH_TEXT_RUNS * 4) return -1;
  if (within(xml.indexOf('<!', from)) || within(xml.indexOf('<?', from)) || within(xml.indexOf(':si', from))) return -1;
  if (!balanced(xml, from, to)) return -1;
  let count = 0;
  for (let at = from; within(at); at = xml.indexOf('<si', at + 3)) {
    const next = xml.charCodeAt(at + 3);
    if (next === 0x3e /* > */ || next === 0x2f /* / */ || next <= 0x20) count += 1;
  }
  return count;
}

/** Whether the tag's name, from `at`, has a namespace prefix (`<x:c …>`). */
function prefixed(tag: string, at: number): boolean {
  for (let k = at; k < tag.length; k++) {
    const c = tag.charCodeAt(k);
    if (c === 0x3a /* : */) return true;
    // The name ends at whitespace, `/` or `>`.
    if (c <= 0x20 || c === 0x2f || c === 0x3e) return false;
  }
  return false;
}
/** The `r` attribute of a row or cell tag. */
const R_ATTRIBUTE = /\sr\s*=\s*(?:"([^"]*)"|'([^']*)')/;
/** A cell reference: its column letters (`$` marks allowed). */
const CELL_REF = /^\s*\$?([A-Za-z]{1,3})\$?\d+\s*$/;

function referenceOf(tag: string): string | undefined {
  const m = R_ATTRIBUTE.exec(tag);
  return m ? (m[1] ?? m[2]) : undefined;
}

/**
 * Looks at the XML of a sheet or of the shared strings on its way to the XML parser, chunk by chunk,
 * so that no text, tag or comment is ever accumulated past a small bound, whatever the file: the XML
 * parser (saxes) gathers a text whole before it hands it over, and a 150 MB cell (148 KB compressed)
 * took the reading thread's heap, or the whole process's, with it. Refused (413) at the first:
 *
 * - text of one cell (sheet) or shared string of more than MAX_XML_TEXT_CHARS, or text between two
 *   tags outside them of as much (whitespace padding);
 * - tag, comment, CDATA section or processing instruction of more than MAX_XML_MARKUP_CHARS (CDATA:
 *   MAX_XML_TEXT_CHARS); a document type declaration (.xlsx has none) is refused as unsupported (415);
 * - elements nested more than MAX_XML_DEPTH deep: refused as unsupported (415).
 *
 * In a sheet it also gives the rows and cells without a reference (`r`, optional in OOXML: such a row or
 * cell follows the previous one) their reference, which exceljs needs, and refuses a cell beyond column XFD.
 * Below a header row (row 1 with cells), a cell in a column where the header has none, and an empty cell
 * (`<c …/>`), are dropped whole: they can give no goods value, and exceljs's work per row grows with
 * its last column (a row of cells in A and XFD cost it 16,384 steps, twice).
 * The text passes through unchanged otherwise; each chunk costs a scan of its characters.
 */
export class XlsxXmlGuard {
  private state: 'text' | 'markup' | 'special' = 'text';
  /** Text characters counted (entities as one) in the current cell/shared string, or since the last tag outside them. */
  private textChars = 0;
  private entityChars = -1;
  /** The tag being read, from its `<`. */
  private markup = '';
  private special = { end: '', cap: 0, chars: 0, tail: '', what: '' };
  /** Inside a cell (sheet) or a shared string (`<si>`). */
  private inItem = false;
  private row = 0;
  private column = -1;
  /** The current cell's reference as the file gives it; undefined when the guard gave it one. */
  private givenRef: string | undefined;
  /** Where the next `&` of the chunk being read is (-1: none), so that text is not searched again and again. */
  private nextAmp = -1;
  private sharedString = -1;
  /** Rich-text runs of the current shared string. */
  private runs = 0;
  /** Elements open now. */
  private depth = 0;
  /** The header row: not met yet, being read, read (`kept` then marks its columns), or not row 1. */
  private header: 'before' | 'reading' | 'read' | 'none' = 'before';
  private kept?: Uint8Array;
  /** Inside a cell being dropped: nothing is handed over until its end. */
  private dropping = false;

  constructor(private readonly part: XmlPart) {}

  /** The current cell's reference, for messages (A1 form, upper case). */
  private get cellRef(): string {
    return this.givenRef === undefined ? `${columnName(this.column)}${this.row}` : this.givenRef.trim().toUpperCase().replace(/\$/g, '');
  }

  /** The chunk as the parser must see it (a tag split across chunks is handed over whole, with the next one). */
  write(chunk: string): string {
    // A sheet's chunk is mostly whole rows: those between its first and last row tag are checked by a
    // quick scan (plainRows) and handed over as they are; the rest is read tag by tag.
    // The shared strings likewise, between the first and the last `<si`.
    if (this.part === 'other') return this.read(chunk);
    const item = this.part === 'sheet' ? '<row' : '<si';
    const first = chunk.indexOf(item);
    const last = first < 0 ? -1 : chunk.lastIndexOf(item);
    if (last <= first) return this.read(chunk);
    const head = this.read(chunk.slice(0, first));
    if (this.state === 'text' && !this.inItem && !this.dropping && this.markup === '') {
      const plain =
        this.part === 'sheet'
          ? (this.header === 'read' || this.header === 'none') && plainRows(chunk, first, last, this.kept)
            ? 0
            : -1
          : plainStrings(chunk, first, last);
      if (plain >= 0) {
        this.sharedString += plain;
        return head + chunk.slice(first, last) + this.read(chunk.slice(last));
      }
    }
    return head + this.read(chunk.slice(first));
  }

  /** Hands `text` over, unless it is part of a cell being dropped. */
  private emit(out: string[], text: string): void {
    if (!this.dropping && text) out.push(text);
  }

  /** `chunk` read tag by tag. */
  private read(chunk: string): string {
    const out: string[] = [];
    let i = 0;
    this.nextAmp = chunk.indexOf('&');
    while (i < chunk.length) {
      if (this.state === 'text') {
        const lt = chunk.indexOf('<', i);
        const stop = lt < 0 ? chunk.length : lt;
        this.countText(chunk, i, stop);
        if (stop > i) this.emit(out, i === 0 && stop === chunk.length ? chunk : chunk.slice(i, stop));
        i = stop;
        if (lt >= 0) {
          this.state = 'markup';
          this.markup = '';
        }
      } else if (this.state === 'markup') {
        i = this.markup === '' ? this.readWholeTag(chunk, i, out) : this.readMarkup(chunk, i, out);
      } else {
        i = this.readSpecial(chunk, i, out);
      }
    }
    return out.join('');
  }

  private countText(s: string, from: number, to: number): void {
    if (to <= from) return;
    if (this.entityChars < 0) {
      if (this.nextAmp >= 0 && this.nextAmp < from) this.nextAmp = s.indexOf('&', from);
      const amp = this.nextAmp;
      if (amp < 0 || amp >= to) {
        this.textChars += to - from;
        this.checkText();
        return;
      }
    }
    for (let k = from; k < to; k++) {
      const c = s.charCodeAt(k);
      if (this.entityChars >= 0) {
        if (c === 0x3b /* ; */) this.entityChars = -1;
        else if (++this.entityChars > MAX_ENTITY_CHARS) {
          this.textChars += this.entityChars;
          this.entityChars = -1;
        }
      } else {
        this.textChars += 1;
        if (c === 0x26 /* & */) this.entityChars = 0;
      }
    }
    this.checkText();
  }

  private checkText(): void {
    if (this.textChars <= MAX_XML_TEXT_CHARS) return;
    if (this.part === 'sharedStrings') {
      throw SheetError.tooLarge(
        `Shared string ${fmt(this.sharedString)} of the workbook (xl/sharedStrings.xml, counted from 0) holds more than ` +
          `${fmt(MAX_CELL_CHARS)} characters, the most an Excel cell holds; refused`,
      );
    }
    if (this.part === 'other') {
      throw SheetError.tooLarge(`A workbook part holds a text of more than ${fmt(MAX_XML_TEXT_CHARS)} characters; refused`);
    }
    if (this.inItem) {
      throw SheetError.tooLarge(`Cell ${this.cellRef} holds more than ${fmt(MAX_CELL_CHARS)} characters, the most an Excel cell holds; refused`);
    }
    throw SheetError.tooLarge(
      `The sheet's XML holds more than ${fmt(MAX_XML_TEXT_CHARS)} characters of text outside any cell (after row ${fmt(this.row)}); refused`,
    );
  }

  /**
   * The common case, a plain tag that starts and ends in this chunk (`i` at its `<`): handed over as it
   * is, without gathering it. Anything else (a comment, a tag cut by the chunk's end…) goes the long way.
   */
  private readWholeTag(chunk: string, i: number, out: string[]): number {
    if (this.header === 'read' && chunk.startsWith('<c/>', i) && !this.dropping) return this.dropEmptyCells(chunk, i);
    const second = chunk.charCodeAt(i + 1);
    if (second === 0x21 /* ! */ || second === 0x3f /* ? */ || Number.isNaN(second)) return this.readMarkup(chunk, i, out);
    const gt = chunk.indexOf('>', i + 1);
    if (gt < 0 || gt - i + 1 > MAX_XML_MARKUP_CHARS) return this.readMarkup(chunk, i, out);
    const lt = chunk.indexOf('<', i + 1);
    if (lt >= 0 && lt < gt) return this.readMarkup(chunk, i, out);
    this.emit(out, this.tag(chunk.slice(i, gt + 1)));
    this.state = 'text';
    return gt + 1;
  }

  /** A run of `<c/>` below the header (`i` at the first): dropped, their columns counted. */
  private dropEmptyCells(chunk: string, i: number): number {
    let at = i;
    while (chunk.startsWith('<c/>', at)) at += 4;
    this.column += (at - i) / 4;
    if (this.column >= MAX_COLUMNS) {
      throw SheetError.tooLarge(`Row ${fmt(this.row)} has more than ${fmt(MAX_COLUMNS)} cells, the most columns (A to XFD) an Excel sheet has; refused`);
    }
    this.state = 'text';
    if (!this.inItem) this.textChars = 0;
    return at;
  }

  private readMarkup(chunk: string, i: number, out: string[]): number {
    // Comments, CDATA and processing instructions may hold `>`: told apart from a tag by their start.
    while (i < chunk.length && this.markup.length < 9 && (this.markup.length < 2 || this.markup[1] === '!' || this.markup[1] === '?')) {
      this.markup += chunk[i++];
      const m = this.markup;
      if (m.length < 2) continue;
      if (m[1] === '?') return this.startSpecial('?>', MAX_XML_MARKUP_CHARS, 'processing instruction', out, i);
      if (m[1] !== '!') break;
      if (m === '<!--') return this.startSpecial('-->', MAX_XML_MARKUP_CHARS, 'comment', out, i);
      if (m === '<![CDATA[') return this.startSpecial(']]>', MAX_XML_TEXT_CHARS, 'CDATA section', out, i);
      if (!'<!--'.startsWith(m.slice(0, 4)) && !'<![CDATA['.startsWith(m)) {
        throw SheetError.unsupported('The workbook XML holds a document type declaration (<!DOCTYPE>), which .xlsx files never have; refused');
      }
    }
    if (i >= chunk.length) return i;
    const gt = chunk.indexOf('>', i);
    // A `<` cannot be inside a tag: the malformed tag goes to the parser as it is, which refuses it.
    const lt = chunk.indexOf('<', i);
    if (lt >= 0 && (gt < 0 || lt < gt)) {
      this.emit(out, this.markup + chunk.slice(i, lt));
      this.markup = '';
      return lt;
    }
    const stop = gt < 0 ? chunk.length : gt + 1;
    this.markup += chunk.slice(i, stop);
    if (this.markup.length > MAX_XML_MARKUP_CHARS) {
      throw SheetError.tooLarge(`The workbook XML holds a tag of more than ${fmt(MAX_XML_MARKUP_CHARS)} characters (${this.where()}); refused`);
    }
    if (gt >= 0) {
      this.emit(out, this.tag(this.markup));
      this.markup = '';
      this.state = 'text';
    }
    return stop;
  }

  /** What is held back at the end of the part (an unfinished tag: the parser sees the XML cut as it is). */
  end(): string {
    const rest = this.markup;
    this.markup = '';
    return rest;
  }

  private startSpecial(end: string, cap: number, what: string, out: string[], i: number): number {
    this.emit(out, this.markup);
    this.special = { end, cap, chars: 0, tail: '', what };
    this.markup = '';
    this.state = 'special';
    return i;
  }

  private readSpecial(chunk: string, i: number, out: string[]): number {
    const { end, tail } = this.special;
    // The end may straddle the previous chunk and this one.
    const straddle = (tail + chunk.slice(i, i + end.length - 1)).indexOf(end);
    const at = straddle >= 0 && straddle < tail.length ? i + straddle - tail.length : chunk.indexOf(end, i);
    const found = (straddle >= 0 && straddle < tail.length) || at >= 0;
    const stop = found ? at + end.length : chunk.length;
    this.special.chars += stop - i;
    if (this.special.what === 'CDATA section') {
      this.textChars += stop - i;
      this.checkText();
    }
    if (this.special.chars > this.special.cap) {
      throw SheetError.tooLarge(`The workbook XML holds a ${this.special.what} of more than ${fmt(this.special.cap)} characters (${this.where()}); refused`);
    }
    this.emit(out, chunk.slice(i, stop));
    if (found) {
      this.state = 'text';
      if (!this.inItem) this.textChars = 0;
    } else {
      this.special.tail = (tail + chunk.slice(Math.max(i, chunk.length - end.length))).slice(-(end.length - 1));
    }
    return stop;
  }

  private where(): string {
    if (this.part === 'other') return "in the sheet's relationships";
    if (this.part === 'sharedStrings') return `in xl/sharedStrings.xml, at shared string ${fmt(Math.max(0, this.sharedString))}`;
    return this.row ? `in the sheet, at row ${fmt(this.row)}` : 'in the sheet, before its first row';
  }

  /** A whole tag: the context it opens or closes; the tag as handed over. */
  private tag(tag: string): string {
    this.nest(tag);
    if (this.part === 'other') {
      this.textChars = 0;
      return tag;
    }
    // Only row, c and si tags change anything: every other one is told apart by its first letters
    // without a regular expression (their names may carry a namespace prefix: then the long way).
    const at = tag.charCodeAt(1) === 0x2f /* / */ ? 2 : 1;
    const first = tag.charCodeAt(at);
    if (first !== 0x72 /* r */ && first !== 0x63 /* c */ && first !== 0x73 /* s */ && !prefixed(tag, at)) {
      if (!this.inItem) this.textChars = 0;
      return tag;
    }
    const m = TAG_NAME.exec(tag);
    if (!m) return tag;
    const closing = m[1] === '/';
    const name = m[2];
    const selfClosing = tag.endsWith('/>');
    if (this.part === 'sharedStrings') {
      if (name === 'si') {
        if (closing) this.inItem = false;
        else {
          this.sharedString += 1;
          this.inItem = !selfClosing;
          this.textChars = 0;
          this.runs = 0;
        }
      } else if (name === 'r' && !closing && this.inItem && ++this.runs > MAX_RICH_TEXT_RUNS) {
        throw SheetError.tooLarge(
          `Shared string ${fmt(this.sharedString)} of the workbook (xl/sharedStrings.xml, counted from 0) is made of more than ` +
            `${fmt(MAX_RICH_TEXT_RUNS)} rich-text runs, more than an Excel cell has characters; refused`,
        );
      }
      if (!this.inItem) this.textChars = 0;
      return tag;
    }
    let result = tag;
    if (name === 'row' && !closing) {
      if (this.header === 'reading') this.header = this.kept ? 'read' : 'none';
      const given = referenceOf(tag);
      const r = parseInt(given ?? '', 10);
      this.row = Number.isInteger(r) && r > 0 ? r : this.row + 1;
      this.column = -1;
      // exceljs numbers a row from its `r` alone (a row without one follows the previous one).
      if (given === undefined) result = `${tag.slice(0, m[0].length)} r="${this.row}"${tag.slice(m[0].length)}`;
      if (this.header === 'before') this.header = this.row === 1 ? 'reading' : 'none';
    } else if (name === 'c') {
      if (closing) {
        this.inItem = false;
        if (this.dropping) {
          this.dropping = false;
          result = '';
        }
      } else {
        result = this.cell(tag, m[0].length);
        this.inItem = !selfClosing;
        this.textChars = 0;
        if (this.header === 'reading' && !selfClosing) (this.kept ??= new Uint8Array(MAX_COLUMNS))[this.column] = 1;
        else if (this.header === 'read' && (selfClosing || !this.kept?.[this.column])) {
          this.dropping = !selfClosing;
          result = '';
        }
      }
    }
    if (!this.inItem) this.textChars = 0;
    return result;
  }

  /** Counts the elements open (a tag with its name, `<x`, `</x`, `<x/>`); past MAX_XML_DEPTH the file is refused. */
  private nest(tag: string): void {
    if (tag.endsWith('/>')) return;
    if (tag.charCodeAt(1) === 0x2f /* / */) {
      if (this.depth > 0) this.depth -= 1;
      return;
    }
    if (++this.depth > MAX_XML_DEPTH) {
      throw SheetError.unsupported(
        `The workbook XML nests elements more than ${MAX_XML_DEPTH} deep (${this.where()}), where a worksheet nests a handful; refused`,
      );
    }
  }

  /** An opening cell tag: its column known (given, or the previous one's next), the reference filled in when missing. */
  private cell(tag: string, nameEnd: number): string {
    const ref = referenceOf(tag);
    if (ref !== undefined) {
      const m = CELL_REF.exec(ref);
      const column = m ? columnIndex(m[1]) : -1;
      if (!m || column >= MAX_COLUMNS) {
        throw SheetError.unsupported(
          `Row ${fmt(this.row)} has a cell whose reference (r="${ref.slice(0, 20)}") is no cell of an Excel sheet (A1 to XFD1048576)`,
        );
      }
      this.column = column;
      this.givenRef = ref;
      return tag;
    }
    this.column += 1;
    if (this.column >= MAX_COLUMNS) {
      throw SheetError.tooLarge(`Row ${fmt(this.row)} has more than ${fmt(MAX_COLUMNS)} cells, the most columns (A to XFD) an Excel sheet has; refused`);
    }
    this.givenRef = undefined;
    return `${tag.slice(0, nameEnd)} r="${this.cellRef}"${tag.slice(nameEnd)}`;
  }
}

/** Text chunks through a guard (see XlsxXmlGuard). */
export async function* guardedXml(chunks: AsyncIterable<string>, part: XmlPart): AsyncGenerator<string> {
  const guard = new XlsxXmlGuard(part);
  for await (const chunk of chunks) {
    const text = guard.write(chunk);
    if (text) yield text;
  }
  const rest = guard.end();
  if (rest) yield rest;
}
