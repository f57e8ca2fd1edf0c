import { GoodsLimits, PRICE_SCALE } from '../goods.limits';
import { DecimalField, HttpUrlField, IdField, LongTextField, TextField } from '../../common/validation/decorators';

interface KeyRules {
  nameRequired?: boolean;
  skuRequired?: boolean;
  urlRequired?: boolean;
}

/**
 * The Goods request body (docs/api-reference.md), built for one endpoint's rules: which keys are required. Unknown fields (currency, medias, ... echoed by clients) are dropped.
 */
function goodsBody(rules: KeyRules) {
  class GoodsBody {
    @TextField('name', GoodsLimits.name, { required: rules.nameRequired }, { example: '스마트 워치 7' })
    name?: string;

    @TextField('brand', GoodsLimits.brand, { nullable: true }, { example: 'Sampletech' })
    brand?: string | null;

    @LongTextField('description', GoodsLimits.description, { nullable: true }, { example: '45 mm case, GPS' })
    description?: string | null;

    @HttpUrlField(
      'url',
      GoodsLimits.url,
      { required: rules.urlRequired },
      {
        description: 'Landing-page URL; a unique key of the item',
        example: 'https://shop.example.com/goods/SW-7',
      },
    )
    url?: string;

    @TextField(
      'sku',
      GoodsLimits.sku,
      { required: rules.skuRequired },
      {
        description: 'Goods code; a unique key of the item',
        example: 'SW-7',
      },
    )
    sku?: string;

    @HttpUrlField(
      'mediaUrl',
      GoodsLimits.url,
      { nullable: true },
      {
        description: 'Source image URL; null removes the media',
        example: 'https://cdn.example.com/sw7.jpg',
      },
    )
    mediaUrl?: string | null;

    @DecimalField('originalPrice', 0, GoodsLimits.maxPrice, PRICE_SCALE, { nullable: true }, { example: 399000 })
    originalPrice?: number | null;

    @DecimalField('discountedPrice', 0, GoodsLimits.maxPrice, PRICE_SCALE, { nullable: true }, { example: 359100 })
    discountedPrice?: number | null;

    @DecimalField('discountPercentage', 0, 100, PRICE_SCALE, { nullable: true }, { example: 10 })
    discountPercentage?: number | null;
  }
  return GoodsBody;
}

/** Body of POST /v1/goods/{accessKey}: name, sku and url are required. */
export class RegisterGoodsDto extends goodsBody({ nameRequired: true, skuRequired: true, urlRequired: true }) {}

/** Body of PUT /v1/goods/{accessKey}: `id` locates the item; sku and url may change. */
export class UpdateGoodsByIdDto extends goodsBody({}) {
  @IdField('id', { required: true }, { description: 'Id of the item to update', example: 1024 })
  id: number;
}

/** Body of PUT /v1/goods/{accessKey}/sku: `sku` locates the item; url may change. */
export class UpdateGoodsBySkuDto extends goodsBody({ skuRequired: true }) {}

/** Body of PUT /v1/goods/{accessKey}/url: `url` locates the item; sku may change. */
export class UpdateGoodsByUrlDto extends goodsBody({ urlRequired: true }) {}

/** One element of a sync array: `id` updates that item; else sku or url decide. */
export class SyncGoodsElementDto extends goodsBody({}) {
  @IdField('id', {}, { description: 'Id of an existing item to update', example: 1024 })
  id?: number;
}

/** The writable fields shared by every body. */
export type GoodsWrite = Omit<SyncGoodsElementDto, 'id'> & { id?: number };
