import { newAccessKey } from './customers.service';

describe('newAccessKey', () => {
  it('is 24 url-safe characters that never start with "-" or "_" (a command line would read an option)', () => {
    for (let i = 0; i < 5000; i += 1) {
      const key = newAccessKey();
      expect(key).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{23}$/);
    }
  });
});
