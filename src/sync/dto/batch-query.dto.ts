import { BooleanField } from '../../common/validation/decorators';
import { RefreshMediaQuery } from '../../media/dto/refresh-media.query';

/** Query of the sync and the spreadsheet import. */
export class BatchQuery extends RefreshMediaQuery {
  @BooleanField(
    'dryRun',
    {},
    {
      default: false,
      description:
        'Answer what the call would do (the same rows, statuses, messages and counts) without writing anything: no goods ' +
        'stored, no image fetched, viewers not told. true/false, 1/0, yes/no or on/off; empty = false. A CREATE row has ' +
        'id null; a row whose image would be fetched says so in message (`dry run: image not fetched: <url>`)',
    },
  )
  dryRun?: boolean;
}
