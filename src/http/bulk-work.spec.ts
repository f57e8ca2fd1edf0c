import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { foreground } from '../common/util/foreground';
import { SyncController } from '../sync/sync.controller';
import { ExcelController } from '../excel/excel.controller';
import { ExcelExportController } from '../excel/excel-export.controller';
import { BulkWorkGuard } from './bulk-work';

function contextOf(request: object, controller: { prototype: object }, method: string): ExecutionContext {
  return {
    getType: () => 'http',
    getHandler: () => (controller.prototype as Record<string, unknown>)[method],
    getClass: () => controller,
    switchToHttp: () => ({ getRequest: () => request }),
  } as unknown as ExecutionContext;
}

describe('BulkWorkGuard', () => {
  const guard = new BulkWorkGuard(new Reflector());

  it.each([
    ['POST /sync', SyncController, 'sync'],
    ['POST /excel', ExcelController, 'upload'],
    ['GET /excel/export', ExcelExportController, 'export'],
  ])('takes a bulk route’s request (%s) out of the interactive ones, and lets it through', (_, controller, method) => {
    const request = {};
    foreground.enter(request);
    try {
      expect(guard.canActivate(contextOf(request, controller, method))).toBe(true);
      expect(foreground.busy).toBe(false);
    } finally {
      foreground.leave(request);
    }
  });

  it('leaves other routes interactive', () => {
    const request = {};
    foreground.enter(request);
    try {
      expect(guard.canActivate(contextOf(request, ExcelController, 'job'))).toBe(true);
      expect(guard.canActivate(contextOf(request, ExcelController, 'listJobs'))).toBe(true);
      expect(foreground.busy).toBe(true);
    } finally {
      foreground.leave(request);
    }
  });
});
