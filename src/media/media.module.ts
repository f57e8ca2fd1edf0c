import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { ImageFetcher } from './image-fetcher';
import { ImageProcessor } from './image-processor';
import { MediaController } from './media.controller';
import { LocalMediaStorage, MediaStorage } from './media-storage';
import { MediaService } from './media.service';
import { MediaOrphanSweep } from './orphan-sweep';

@Module({
  controllers: [MediaController],
  providers: [
    MediaService,
    MediaOrphanSweep,
    ImageFetcher,
    ImageProcessor,
    { provide: MediaStorage, inject: [AppConfig], useFactory: (config: AppConfig) => new LocalMediaStorage(config.media.dir) },
  ],
  exports: [MediaService],
})
export class MediaModule {}
