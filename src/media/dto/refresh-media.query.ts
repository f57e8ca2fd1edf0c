import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';

export class RefreshMediaQuery {
  @ApiPropertyOptional({ description: 'Fetch the image again even when mediaUrl is unchanged', default: false })
  @Transform(({ value }: { value: unknown }) => (value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : value))
  @IsOptional()
  @IsBoolean({ message: 'refreshMedia must be true or false' })
  refreshMedia?: boolean;
}
