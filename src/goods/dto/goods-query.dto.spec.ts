import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ListGoodsQuery } from './goods-query.dto';

describe('ListGoodsQuery: after', () => {
  const read = (after: string) => {
    const query = plainToInstance(ListGoodsQuery, { after });
    const errors = validateSync(query, { stopAtFirstError: true });
    return { after: query.after, messages: errors.flatMap((e) => Object.values(e.constraints ?? {})) };
  };

  it('reads digits as the last id seen (an empty value is absent)', () => {
    expect(read(' 42 ')).toEqual({ after: 42, messages: [] });
    expect(read('0')).toEqual({ after: 0, messages: [] });
    expect(read('')).toEqual({ after: undefined, messages: [] });
  });

  it('names digits beyond the largest id as sent, not as the float they would become', () => {
    expect(read('9007199254740993').messages).toEqual(["after is too large: ids go up to 9007199254740991; got '9007199254740993'"]);
    expect(read('99999999999999999999999').messages).toEqual(["after is too large: ids go up to 9007199254740991; got '99999999999999999999999'"]);
    expect(read('9007199254740991')).toEqual({ after: 9007199254740991, messages: [] });
  });

  it('refuses anything else, naming it', () => {
    expect(read('-1').messages).toEqual(["after must be a goods id (an integer from 0) as last seen; got '-1'"]);
    expect(read('1.5').messages).toEqual(["after must be a goods id (an integer from 0) as last seen; got '1.5'"]);
  });
});
