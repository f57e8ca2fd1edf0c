import { ApiPropertyOptional } from '@nestjs/swagger';
import { booleanRefusal, booleanText } from '../../common/validation/decorators';
import { IsBoolean, IsOptional } from 'class-validator';

export class RefreshMediaQuery {
  @ApiPropertyOptional({ description: 'Fetch the image again even when mediaUrl is unchanged', default: false })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: booleanRefusal('refreshMedia') })
  refreshMedia?: boolean;
}
