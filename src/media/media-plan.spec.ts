import { MediaPlan, planMedia } from './media-plan';

describe('planMedia', () => {
  const A = 'https://cdn.example.com/a.jpg';
  const B = 'https://cdn.example.com/b.jpg';

  it.each<[string, string | null | undefined, string | null, boolean, MediaPlan]>([
    ['no URL, nothing stored', undefined, null, false, { action: 'keep' }],
    ['null URL, nothing stored', null, null, false, { action: 'keep' }],
    ['empty URL, nothing stored', '', null, false, { action: 'keep' }],
    ['no URL, nothing stored, refresh', null, null, true, { action: 'keep' }],
    ['null URL, media stored: remove', null, A, false, { action: 'remove' }],
    ['undefined URL, media stored: remove', undefined, A, false, { action: 'remove' }],
    ['null URL, media stored, refresh: still remove', null, A, true, { action: 'remove' }],
    ['same URL: keep, no fetch', A, A, false, { action: 'keep' }],
    ['same URL with refresh: fetch again', A, A, true, { action: 'fetch', url: A }],
    ['new URL: fetch', B, A, false, { action: 'fetch', url: B }],
    ['new URL with refresh: fetch', B, A, true, { action: 'fetch', url: B }],
    ['first URL (nothing stored): fetch', A, null, false, { action: 'fetch', url: A }],
  ])('%s', (_title, finalUrl, storedFrom, refresh, expected) => {
    expect(planMedia(finalUrl, storedFrom, refresh)).toEqual(expected);
  });

  it('compares URLs exactly (case and query matter)', () => {
    expect(planMedia('https://cdn.example.com/A.jpg', A, false)).toEqual({ action: 'fetch', url: 'https://cdn.example.com/A.jpg' });
    expect(planMedia(`${A}?v=2`, A, false)).toEqual({ action: 'fetch', url: `${A}?v=2` });
  });
});
