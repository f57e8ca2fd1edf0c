import { megabytes, overJobBytesMessage, overSyncBytesMessage, overSyncRowsMessage, queryFlag, UploadLimits } from './upload-limits';

const LIMITS: UploadLimits = { syncMaxBytes: 20 * 1024 * 1024, syncMaxRows: 10_000, jobMaxBytes: 100 * 1024 * 1024, jobMaxRows: 200_000 };

describe('upload limits', () => {
  it('reads async as the query DTO does: only a spelling of true asks for a job', () => {
    for (const value of ['true', 'TRUE', ' 1 ', 'yes', 'on', 'y', 1]) expect(queryFlag(value)).toBe(true);
    for (const value of [undefined, '', 'false', '0', 'no', 'maybe', ['true', 'true'], 0, 2]) expect(queryFlag(value)).toBe(false);
  });

  it('names the limit passed and proposes async=true with the job limits', () => {
    expect(overSyncRowsMessage(LIMITS, false)).toBe(
      'The sheet has more than 10,000 data rows, the limit of an immediate import; the same file can be imported as a background job ' +
        'with async=true (up to 100 MB and 200,000 data rows; the answer is then 202 with the job)',
    );
    expect(overSyncBytesMessage(LIMITS, false)).toBe(
      'The file is over the 20 MB limit of an immediate import; the same file can be imported as a background job ' +
        'with async=true (up to 100 MB and 200,000 data rows; the answer is then 202 with the job)',
    );
    expect(overJobBytesMessage(LIMITS)).toBe('The file is over the 100 MB limit of an import job');
  });

  it('a dry run is told the immediate limits, without proposing a job (dryRun with async=true is 400)', () => {
    expect(overSyncRowsMessage(LIMITS, true)).toBe(
      'A dry run takes a file within the immediate import limits (20 MB and 10,000 data rows); this one has more than 10,000 data rows',
    );
    expect(overSyncBytesMessage(LIMITS, true)).not.toMatch(/async/);
  });

  it('gives megabytes to one decimal', () => {
    expect(megabytes(1024 * 1024)).toBe('1');
    expect(megabytes(1.5 * 1024 * 1024)).toBe('1.5');
  });
});
