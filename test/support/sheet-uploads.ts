import type { Response } from 'supertest';
import type { TestApp, TestCustomer } from './test-app';

/**
 * Spreadsheet uploads as the import specs send them: the file as the multipart part `file` (typed as
 * plain bytes, so that only its content tells what it is), and the job of a 202 once it has ended.
 */
export function sheetUploads(ctx: () => TestApp) {
  function upload(c: TestCustomer, file: Buffer, filename: string, query = '') {
    return ctx()
      .http.post(`/v1/goods/${c.accessKey}/excel${query}`)
      .set('Authorization', c.auth())
      .attach('file', file, { filename, contentType: 'application/octet-stream' });
  }

  /**
   * The job of a 202 upload, once it has ended; an error naming its last state if it has not within
   * `timeoutMs` (a test timing out instead would leave this loop polling after the app is closed).
   */
  async function ended(c: TestCustomer, res: Response, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    expect(res.status).toBe(202);
    const path = `/v1/goods/${c.accessKey}/excel/jobs/${res.body.jobId}`;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await ctx().http.get(path).set('Authorization', c.auth()).expect(200);
      if (job.body.state === 'succeeded' || job.body.state === 'failed') return job.body as Record<string, unknown>;
      if (Date.now() > deadline) {
        const { results: _results, ...state } = job.body as Record<string, unknown>;
        throw new Error(`import job ${String(job.body.jobId)} has not ended within ${timeoutMs} ms: ${JSON.stringify(state)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return { upload, ended };
}

/** An error answer: its status, code and message. */
export function expectSheetError(res: Response, status: number, code: number, message: RegExp): void {
  expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
  expect(res.body._e).toMatch(message);
}
