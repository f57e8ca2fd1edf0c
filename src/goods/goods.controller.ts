import { Body, Controller, Delete, Get, HttpCode, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, IdPathParam, TenantRoute } from '../http/api-docs.decorators';
import { IdParam } from '../http/id-param';
import { RegisterGoodsDto, UpdateGoodsByIdDto, UpdateGoodsBySkuDto, UpdateGoodsByUrlDto } from './dto/goods-body.dto';
import { ListGoodsQuery, SkuQuery, UrlQuery } from './dto/goods-query.dto';
import { DeleteResponse, GoodsListResponse, GoodsResponse } from './dto/goods-response.dto';
import { RefreshMediaQuery } from '../media/dto/refresh-media.query';
import { GoodsService } from './goods.service';

const DELETED: DeleteResponse = { _s: 0 };

@ApiTags('Goods')
@TenantRoute()
@Controller('v1/goods/:accessKey')
export class GoodsController {
  constructor(private readonly goods: GoodsService) {}

  @Get()
  @ApiOperation({
    summary: 'List goods (newest first), optionally filtered by a keyword in name, brand or sku',
    description:
      'Answers a page of the catalog, newest (highest id) first, with the exact number of matches in totalCount. searchKeyword matches name, brand or sku containing it, ignoring letter case (NFKC-normalised). List items have no mediaUrl. ' +
      'With `after` (the last id seen; 0 to start) it answers the next `count` items with a higher id, oldest first, off the index (cursor paging: walk a large catalog by passing the last id of each answer until an answer is shorter than `count`); `page` must then be absent or 1 (else 400), and totalCount still counts all matches.',
  })
  @ApiOkResponse({ type: GoodsListResponse })
  @ApiErrors(400)
  list(@CurrentTenant() tenant: Tenant, @Query() query: ListGoodsQuery): Promise<GoodsListResponse> {
    return this.goods.list(tenant, query);
  }

  @Get('sku')
  @ApiOperation({
    summary: 'Look up one item by its goods code',
    description:
      'The code goes in `value` or in `sku` (`value` wins when both are sent); trimmed, not empty. Answers the item with mediaUrl; 404 -404 when no item has that code.',
  })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findBySku(@CurrentTenant() tenant: Tenant, @Query() query: SkuQuery): Promise<GoodsResponse> {
    return this.goods.findBySku(tenant, query.key);
  }

  @Get('url')
  @ApiOperation({
    summary: 'Look up one item by its goods URL',
    description:
      'The URL goes in `value` or in `url` (`value` wins when both are sent); trimmed, not empty. Answers the item with mediaUrl; 404 -404 when no item has that URL.',
  })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findByUrl(@CurrentTenant() tenant: Tenant, @Query() query: UrlQuery): Promise<GoodsResponse> {
    return this.goods.findByUrl(tenant, query.key);
  }

  // After the sku and url lookups, so that those two words are not read as ids.
  @Get(':goodsId')
  @ApiOperation({
    summary: 'Look up one item by its id',
    description: 'Answers the item with mediaUrl, as the sku and url lookups do; 404 -404 when no item of this customer has that id.',
  })
  @IdPathParam('goodsId', 'Id of the goods item')
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findById(@CurrentTenant() tenant: Tenant, @IdParam('goodsId') goodsId: number): Promise<GoodsResponse> {
    return this.goods.findById(tenant, goodsId);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Register one item; refused (409) when its sku or url is already registered',
    description:
      'name, sku and url are required; id is ignored. mediaUrl is fetched (public http/https hosts only) and stored with thumbnails; an image that cannot be stored leaves the item without one. Answers the created item (its thumbnails carry fileSize); 409 -409 names the holder of a taken sku or url.',
  })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 409, 413, 415)
  register(@CurrentTenant() tenant: Tenant, @Body() body: RegisterGoodsDto): Promise<GoodsResponse> {
    return this.goods.register(tenant, body);
  }

  @Put()
  @ApiOperation({
    summary: 'Update one item found by id (partial: absent fields keep their value; sku and url may change)',
    description:
      'Partial update of the item with that id: absent fields keep their value, null clears a nullable one; sku and url may change (409 when another item holds the new one). Answers the updated item. A change of what viewers see (name, brand, url, sku, prices, image) reaches the viewers of the READY and ONAIR campaigns holding it (goods.update).',
  })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409, 413, 415)
  updateById(@CurrentTenant() tenant: Tenant, @Body() body: UpdateGoodsByIdDto, @Query() query: RefreshMediaQuery): Promise<GoodsResponse> {
    return this.goods.updateById(tenant, body, query);
  }

  @Put('sku')
  @ApiOperation({
    summary: 'Update one item found by sku (partial; url may change)',
    description:
      'Partial update of the item with that sku: absent fields keep their value, null clears a nullable one; url may change. Answers the updated item. A change of what viewers see (name, brand, url, sku, prices, image) reaches the viewers of the READY and ONAIR campaigns holding it (goods.update).',
  })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409, 413, 415)
  updateBySku(@CurrentTenant() tenant: Tenant, @Body() body: UpdateGoodsBySkuDto, @Query() query: RefreshMediaQuery): Promise<GoodsResponse> {
    return this.goods.updateBySku(tenant, body, query);
  }

  @Put('url')
  @ApiOperation({
    summary: 'Update one item found by url (partial; sku may change)',
    description:
      'Partial update of the item with that url: absent fields keep their value, null clears a nullable one; sku may change. Answers the updated item. A change of what viewers see (name, brand, url, sku, prices, image) reaches the viewers of the READY and ONAIR campaigns holding it (goods.update).',
  })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409, 413, 415)
  updateByUrl(@CurrentTenant() tenant: Tenant, @Body() body: UpdateGoodsByUrlDto, @Query() query: RefreshMediaQuery): Promise<GoodsResponse> {
    return this.goods.updateByUrl(tenant, body, query);
  }

  @Delete('sku')
  @ApiOperation({
    summary: 'Delete one item by its goods code',
    description:
      'The code goes in `value` or in `sku`. Deleting frees the sku and url, takes the item out of every campaign (viewers are told) and deletes its image files when no other item uses them.',
  })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteBySku(@CurrentTenant() tenant: Tenant, @Query() query: SkuQuery): Promise<DeleteResponse> {
    await this.goods.deleteBySku(tenant, query.key);
    return DELETED;
  }

  @Delete('url')
  @ApiOperation({
    summary: 'Delete one item by its goods URL',
    description:
      'The URL goes in `value` or in `url`. Deleting frees the sku and url, takes the item out of every campaign (viewers are told) and deletes its image files when no other item uses them.',
  })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteByUrl(@CurrentTenant() tenant: Tenant, @Query() query: UrlQuery): Promise<DeleteResponse> {
    await this.goods.deleteByUrl(tenant, query.key);
    return DELETED;
  }

  @Delete(':goodsId/sku')
  @ApiOperation({
    summary: 'Delete by goods code; the goodsId segment must name the item found',
    description: 'Like the delete by goods code, but the goodsId segment must be the id of the item found, else 404 -404.',
  })
  @IdPathParam('goodsId', 'Id of the goods item')
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteBySkuWithId(@CurrentTenant() tenant: Tenant, @IdParam('goodsId') goodsId: number, @Query() query: SkuQuery): Promise<DeleteResponse> {
    await this.goods.deleteBySku(tenant, query.key, goodsId);
    return DELETED;
  }

  @Delete(':goodsId/url')
  @ApiOperation({
    summary: 'Delete by goods URL; the goodsId segment must name the item found',
    description: 'Like the delete by goods URL, but the goodsId segment must be the id of the item found, else 404 -404.',
  })
  @IdPathParam('goodsId', 'Id of the goods item')
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteByUrlWithId(@CurrentTenant() tenant: Tenant, @IdParam('goodsId') goodsId: number, @Query() query: UrlQuery): Promise<DeleteResponse> {
    await this.goods.deleteByUrl(tenant, query.key, goodsId);
    return DELETED;
  }

  @Delete(':goodsId')
  @ApiOperation({
    summary: 'Delete one item by id',
    description:
      'Deleting frees the sku and url, takes the item out of every campaign (viewers are told) and deletes its image files when no other item uses them; 404 -404 when no item has that id.',
  })
  @IdPathParam('goodsId', 'Id of the goods item')
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteById(@CurrentTenant() tenant: Tenant, @IdParam('goodsId') goodsId: number): Promise<DeleteResponse> {
    await this.goods.deleteById(tenant, goodsId);
    return DELETED;
  }
}
