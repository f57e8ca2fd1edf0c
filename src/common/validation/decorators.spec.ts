import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { RegisterGoodsDto } from '../../goods/dto/goods-body.dto';
import { isDangerousLink } from './decorators';

describe('isDangerousLink', () => {
  it.each([
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    ' \t\njavascript:alert(1)',
    '\u0000javascript:alert(1)',
    '\u0085\u00a0\u2028\u3000\ufeffjavascript:alert(1)',
    'java\tscr\nipt:alert(1)',
    'j\ra\tvascript:x',
    'vbscript:x',
    'data:,x',
    'file:///c:/windows',
    'blob:null/1',
  ])('%p is dangerous', (text) => {
    expect(isDangerousLink(text)).toBe(true);
  });

  it.each(['rtmp://a/b', 'https://a/b?u=javascript:x', 'stream id 7', 'javascript', 'xjavascript:1', 'data', 'data-1:x', '', 'mailto:a@b'])(
    '%p is not',
    (text) => {
      expect(isDangerousLink(text)).toBe(false);
    },
  );
});

describe('shared text fields refuse text that is not well-formed Unicode', () => {
  const fieldsWithErrors = (plain: Record<string, unknown>) =>
    validateSync(plainToInstance(RegisterGoodsDto, plain), { whitelist: true, forbidUnknownValues: false }).map((e) => [
      e.property,
      Object.values(e.constraints ?? {}).join('; '),
    ]);
  const valid = { name: 'n', sku: 's', url: 'https://shop.example.com/a' };

  it('TextField, LongTextField and HttpUrlField', () => {
    expect(fieldsWithErrors(valid)).toEqual([]);
    expect(fieldsWithErrors({ ...valid, name: 'a\ud800b', brand: '\udc00', description: 'x\ud83d', mediaUrl: 'https://cdn.example.com/\ud800' })).toEqual([
      ['name', expect.stringContaining('name must be well-formed Unicode text')],
      ['brand', expect.stringContaining('brand must be well-formed Unicode text')],
      ['description', expect.stringContaining('description must be well-formed Unicode text')],
      ['mediaUrl', expect.stringContaining('mediaUrl must be well-formed Unicode text')],
    ]);
    expect(fieldsWithErrors({ ...valid, name: '😀 \u{1F600}', description: '한글' })).toEqual([]);
  });
});
