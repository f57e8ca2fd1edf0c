import { Module } from '@nestjs/common';
import { PageFiles } from './page-files';
import { PagesController } from './pages.controller';

/** The operator page (/console) and the viewer page (/watch/...), served from public/. */
@Module({
  controllers: [PagesController],
  providers: [PageFiles],
})
export class PagesModule {}
