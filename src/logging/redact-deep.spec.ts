import { redactDeep } from './redact-deep';

describe('redactDeep', () => {
  it('redacts every string of nested objects and arrays, keeping other values', () => {
    const input = { msg: 'GET /a?token=abc', n: 3, ok: true, nested: { list: ['https://u:pw@h.example/x', 1], none: null } };
    expect(redactDeep(input)).toEqual({ msg: 'GET /a?token=***', n: 3, ok: true, nested: { list: ['https://***@h.example/x', 1], none: null } });
  });

  it('turns errors into {type, message, stack} with the credentials gone', () => {
    const err = Object.assign(new Error('connect failed: mysql://root:s3cret@db:3306'), { code: 'ECONNREFUSED' });
    const out = redactDeep(err) as Record<string, string>;
    expect(out.type).toBe('Error');
    expect(out.code).toBe('ECONNREFUSED');
    expect(out.message).toBe('connect failed: mysql://***@db:3306');
    expect(out.stack).not.toContain('s3cret');
  });

  it('never dumps a class instance (a request, a buffer)', () => {
    class IncomingThing {
      headers = { authorization: 'Bearer x' };
    }
    expect(redactDeep({ req: new IncomingThing(), buf: Buffer.from('secret') })).toEqual({ req: '[IncomingThing]', buf: '[Buffer]' });
  });
});
