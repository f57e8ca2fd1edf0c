import { ApiPropertyOptional } from '@nestjs/swagger';
import { booleanText } from '../../common/validation/decorators';
import { IsBoolean, IsOptional } from 'class-validator';

export class RefreshMediaQuery {
  @ApiPropertyOptional({ description: 'Fetch the image again even when mediaUrl is unchanged', default: false })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: 'refreshMedia must be true or false' })
  refreshMedia?: boolean;
}
