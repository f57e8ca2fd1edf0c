import { SheetError } from './sheet-error';
import { MAX_RICH_TEXT_RUNS, MAX_XML_DEPTH, MAX_XML_MARKUP_CHARS, MAX_XML_TEXT_CHARS, XlsxXmlGuard, XmlPart } from './xlsx-xml-guard';

/** The XML through a guard in chunks of `size` characters: what the parser gets. */
function through(xml: string, part: XmlPart = 'sheet', size = 7): string {
  const guard = new XlsxXmlGuard(part);
  let out = '';
  for (let i = 0; i < xml.length; i += size) out += guard.write(xml.slice(i, i + size));
  return out;
}

function refusal(run: () => unknown): SheetError {
  try {
    run();
  } catch (err) {
    if (err instanceof SheetError) return err;
    throw err;
  }
  throw new Error('not refused');
}

const SHEET = (rows: string) => `<?xml version="1.0"?><worksheet xmlns="x"><sheetData>${rows}</sheetData></worksheet>`;

describe('XlsxXmlGuard', () => {
  it('hands a well-formed sheet over unchanged, whatever the chunking (comments, CDATA, entities across chunks)', () => {
    const xml = SHEET(
      '<row r="1"><c r="A1" t="inlineStr"><is><t>a &amp; b &#x41;</t></is></c><!-- a > b --><c r="B1"><v>1</v></c></row>' +
        '<row r="2"><c r="A2" t="inlineStr"><is><t><![CDATA[x > y]]></t></is></c></row>',
    );
    for (const size of [1, 2, 3, 7, 64, xml.length]) expect(through(xml, 'sheet', size)).toBe(xml);
  });

  it('gives cells without a reference the one after the previous cell of their row (rows without r follow the previous row)', () => {
    const xml = SHEET('<row r="3"><c t="inlineStr"><is><t>a</t></is></c><c r="D3"><v>1</v></c><c><v>2</v></c></row><row><c/></row>');
    expect(through(xml, 'sheet', 5)).toBe(
      SHEET('<row r="3"><c r="A3" t="inlineStr"><is><t>a</t></is></c><c r="D3"><v>1</v></c><c r="E3"><v>2</v></c></row><row r="4"><c r="A4"/></row>'),
    );
  });

  it('whole rows and shared strings inside a chunk (passed on after a quick scan) come out as the tag-by-tag reading gives them', () => {
    const rows = (n: number, odd: (r: number) => string) =>
      Array.from({ length: n }, (_, i) =>
        i === n / 2 ? odd(i + 1) : `<row r="${i + 1}"><c r="A${i + 1}" s="1" t="s"><v>${i}</v></c><c r="B${i + 1}"><v>1</v></c></row>`,
      ).join('');
    // Each oddity in the middle of a 64 KB chunk: the tag-by-tag reading still sees it, the chunk whole or cut small.
    const oddities: Array<(r: number) => string> = [
      (r) => `<row r="${r}"><c><v>1</v></c><c r="C${r}"/><c/></row>`, // cells without r: given theirs
      (r) => `<row><c r="A${r}"><v>1</v></c></row>`, // a row without r
      (r) => `<row r="${r}"><!-- note --><c r="A${r}"><v>1</v></c></row>`,
      (r) => `<row r="${r}"><c r="$A$${r}"><v>1</v></c></row>`,
      (r) => `<row r="${r}"><x:c r="A${r}"><v>1</v></x:c></row>`,
    ];
    for (const odd of oddities) {
      const xml = SHEET(rows(2000, odd));
      const slow = through(xml, 'sheet', 1);
      expect(through(xml, 'sheet', 65536)).toBe(slow);
      expect(through(xml, 'sheet', xml.length)).toBe(slow);
    }
    expect(through(SHEET(rows(2000, (r) => `<row><c/><c/></row><row r="${r + 1}"><c/></row>`)), 'sheet', 65536)).toContain(
      // Rows and cells get their reference; empty cells below the header are dropped (see the dropping test).
      '<v>1</v></c></row><row r="1001"></row><row r="1002"></row><row r="1002">',
    );
    // Refusals in the middle of a chunk are not passed over.
    expect(refusal(() => through(SHEET(rows(2000, (r) => `<row r="${r}"><c r="XFE${r}"><v>1</v></c></row>`)), 'sheet', 65536)).message).toMatch(
      /no cell of an Excel sheet/,
    );
    expect(refusal(() => through(SHEET(rows(2000, (r) => `<row r="${r}"><c r="AB"><v>1</v></c></row>`)), 'sheet', 65536)).message).toMatch(
      /no cell of an Excel sheet/,
    );
    const strings = (n: number) =>
      `<sst>${Array.from({ length: n }, (_, i) => `<si><t>s${i}</t></si>`).join('')}<si><t>${'x'.repeat(MAX_XML_TEXT_CHARS + 1)}</t></si></sst>`;
    // The index a message names counts the strings passed over quickly too.
    expect(refusal(() => through(strings(5000), 'sharedStrings', 65536)).message).toMatch(/^Shared string 5,000 of the workbook/);
    expect(refusal(() => through(strings(5000), 'sharedStrings', 1000)).message).toMatch(/^Shared string 5,000 of the workbook/);
  });

  it('refuses a cell of more than 32,767 characters at the first chunk over the bound, naming the cell', () => {
    const guard = new XlsxXmlGuard('sheet');
    guard.write(SHEET('').slice(0, -24) + '<row r="7"><c t="inlineStr"><is><t>');
    const chunk = 'y'.repeat(64 * 1024);
    let written = 0;
    const err = refusal(() => {
      for (;;) {
        guard.write(chunk);
        written += chunk.length;
      }
    });
    expect(err.message).toBe('Cell A7 holds more than 32,767 characters, the most an Excel cell holds; refused');
    expect(written).toBeLessThanOrEqual(MAX_XML_TEXT_CHARS);
  });

  it('counts the runs of one cell together (text split by comments) and an entity as one character', () => {
    const part = '&amp;'.repeat(1000) + '<!---->';
    // 1,000 characters per part: 229 parts pass, 230 do not.
    expect(() => through(SHEET(`<row r="1"><c r="B1" t="inlineStr"><is><t>${part.repeat(229)}</t></is></c></row>`), 'sheet', 4096)).not.toThrow();
    expect(refusal(() => through(SHEET(`<row r="1"><c r="B1" t="inlineStr"><is><t>${part.repeat(230)}</t></is></c></row>`), 'sheet', 4096)).message).toMatch(
      /^Cell B1 holds more than 32,767 characters/,
    );
  });

  it('refuses a shared string over the bound, naming it', () => {
    const xml = `<sst><si><t>a</t></si><si><r><t>${'x'.repeat(MAX_XML_TEXT_CHARS)}</t></r><r><t>x</t></r></si></sst>`;
    expect(refusal(() => through(xml, 'sharedStrings', 65536)).message).toMatch(/^Shared string 1 of the workbook .* holds more than 32,767 characters/);
  });

  it('refuses a shared string of more rich-text runs than a cell has characters, however the XML is cut; as many pass', () => {
    const sst = (runs: number) => `<sst><si><t>a</t></si><si>${'<r><rPr><b/></rPr></r>'.repeat(runs)}</si><si><t>b</t></si></sst>`;
    for (const size of [7, 4096, 65536, 1 << 20]) {
      expect(refusal(() => through(sst(MAX_RICH_TEXT_RUNS + 1), 'sharedStrings', size)).message).toBe(
        'Shared string 1 of the workbook (xl/sharedStrings.xml, counted from 0) is made of more than 32,767 rich-text runs, ' +
          'more than an Excel cell has characters; refused',
      );
      expect(through(sst(MAX_RICH_TEXT_RUNS), 'sharedStrings', size)).toBe(sst(MAX_RICH_TEXT_RUNS));
    }
    // Each string counts its own runs; phonetic runs (rPh) are no rich-text runs.
    const many = `<sst>${`<si>${'<r><t>x</t></r>'.repeat(1000)}<rPh><t>y</t></rPh></si>`.repeat(100)}</sst>`;
    expect(through(many, 'sharedStrings', 65536)).toBe(many);
  });

  it('refuses whitespace padding, a huge tag, comment or CDATA, a DOCTYPE and a cell beyond XFD', () => {
    expect(refusal(() => through(SHEET(`<row r="1">${' '.repeat(MAX_XML_TEXT_CHARS + 1)}</row>`), 'sheet', 65536)).message).toMatch(/outside any cell/);
    expect(refusal(() => through(SHEET(`<row r="1" ${'a="1" '.repeat(MAX_XML_MARKUP_CHARS / 6 + 1)}/>`), 'sheet', 65536)).message).toMatch(
      /a tag of more than 65,536/,
    );
    expect(refusal(() => through(SHEET(`<!--${'<a>'.repeat(MAX_XML_MARKUP_CHARS)}-->`), 'sheet', 65536)).message).toMatch(/a comment of more than/);
    expect(
      refusal(() => through(SHEET(`<row r="1"><c r="A1"><v><![CDATA[${'<a>'.repeat(MAX_XML_TEXT_CHARS)}]]></v></c></row>`), 'sheet', 65536)).message,
    ).toMatch(/^Cell A1 holds more than/);
    expect(refusal(() => through('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x/>')).refusal).toBe('UNSUPPORTED');
    expect(refusal(() => through(SHEET('<row r="1"><c r="XFE1"><v>1</v></c></row>'))).message).toMatch(/no cell of an Excel sheet/);
    expect(refusal(() => through(SHEET(`<row r="1">${'<c><v>1</v></c>'.repeat(16_385)}</row>`), 'sheet', 65536)).message).toBe(
      'Row 1 has more than 16,384 cells, the most columns (A to XFD) an Excel sheet has; refused',
    );
  });

  it(`refuses elements nested more than ${MAX_XML_DEPTH} deep (415) in a sheet and in the shared strings, whatever the chunking`, () => {
    const deep = (n: number) => `${'<x>'.repeat(n)}${'</x>'.repeat(n)}`;
    // worksheet, sheetData, row and 61 more: at the bound, handed over.
    const atBound = SHEET(`<row r="1"><c r="A1"><v>1</v></c></row><row r="2">${deep(MAX_XML_DEPTH - 3)}</row>`);
    expect(through(atBound, 'sheet', 4096)).toBe(atBound);
    const over = SHEET(`<row r="1"><c r="A1"><v>1</v></c></row><row r="2">${deep(10_000)}</row>`);
    for (const size of [7, 4096, over.length]) {
      const err = refusal(() => through(over, 'sheet', size));
      expect({ refusal: err.refusal, message: err.message }).toEqual({
        refusal: 'UNSUPPORTED',
        message: `The workbook XML nests elements more than ${MAX_XML_DEPTH} deep (in the sheet, at row 2), where a worksheet nests a handful; refused`,
      });
    }
    const sst = `<sst><si>${deep(10_000)}</si></sst>`;
    expect(refusal(() => through(sst, 'sharedStrings', 4096)).message).toMatch(
      /^The workbook XML nests elements more than 64 deep \(in xl\/sharedStrings\.xml/,
    );
  });

  it('below the header drops empty cells and cells in columns where the header has none, whatever the chunking', () => {
    const xml = SHEET(
      '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c><c r="C1"><v>1</v></c><c r="D1"/></row>' +
        '<row r="2"><c r="A2"><v>1</v></c><c r="B2"><v>2</v></c><c r="C2" t="inlineStr"><is><t>c</t></is></c><c r="D2"><v>4</v></c><c r="XFD2"><v>5</v></c></row>' +
        `<row r="3"><c r="A3"><v>1</v></c>${'<c/>'.repeat(500)}<c r="C3"/><c><v>9</v></c></row>`,
    );
    const kept = SHEET(
      '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c><c r="C1"><v>1</v></c><c r="D1"/></row>' +
        '<row r="2"><c r="A2"><v>1</v></c><c r="C2" t="inlineStr"><is><t>c</t></is></c></row>' +
        '<row r="3"><c r="A3"><v>1</v></c></row>',
    );
    for (const size of [1, 5, 7, 64, 4096, xml.length]) expect(through(xml, 'sheet', size)).toBe(kept);
    // Without a row 1 first, nothing is dropped (the reader refuses such a sheet itself).
    const noHeader = SHEET('<row r="2"><c r="A2"><v>1</v></c><c r="XFD2"><v>5</v></c></row>');
    expect(through(noHeader, 'sheet', 64)).toBe(noHeader);
  });
});
