import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { RegisterGoodsDto, UpdateGoodsBySkuDto } from '../../goods/dto/goods-body.dto';
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
    expect(fieldsWithErrors({ ...valid, name: 'x\u0000y', description: '\u0000' })).toEqual([
      ['name', expect.stringContaining('name must be well-formed Unicode text (it contains the NUL character U+0000)')],
      ['description', expect.stringContaining('description must be well-formed Unicode text (it contains the NUL character U+0000)')],
    ]);
  });
});

describe('null and blank text in bodies', () => {
  const read = (plain: Record<string, unknown>) => {
    const dto = plainToInstance(UpdateGoodsBySkuDto, plain);
    const errors = validateSync(dto, { whitelist: true, forbidUnknownValues: false }).map((e) => e.property);
    return { dto: { ...dto }, errors };
  };

  it('null for a field that cannot be cleared is the same as leaving it out', () => {
    const { dto, errors } = read({ sku: 'S-1', name: null, url: null });
    expect(errors).toEqual([]);
    expect(dto.name).toBeUndefined();
    expect(dto.url).toBeUndefined();
    // A required field sent as null is missing, and says so.
    const missing = validateSync(plainToInstance(RegisterGoodsDto, { name: null, sku: 's', url: 'https://shop.example.com/a' }), {
      stopAtFirstError: true,
    });
    expect(missing.map((e) => Object.values(e.constraints ?? {}))).toEqual([['name is required']]);
  });

  it('blank text for a field that may be cleared is null; free text is kept as sent; blank keys are still refused', () => {
    const { dto, errors } = read({ sku: 'S-1', brand: '  ', mediaUrl: '', originalPrice: '', discountedPrice: ' ', discountPercentage: '', description: '' });
    expect(errors).toEqual([]);
    expect(dto).toMatchObject({ brand: null, mediaUrl: null, originalPrice: null, discountedPrice: null, discountPercentage: null, description: '' });
    expect(read({ sku: 'S-1', name: ' ' }).errors).toEqual(['name']);
    expect(read({ sku: '' }).errors).toEqual(['sku']);
  });
});
