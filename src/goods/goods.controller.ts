import { Body, Controller, Delete, Get, HttpCode, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
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
  @ApiOperation({ summary: 'List goods (newest first), optionally filtered by a keyword in name, brand or sku' })
  @ApiOkResponse({ type: GoodsListResponse })
  @ApiErrors(400)
  list(@CurrentTenant() tenant: Tenant, @Query() query: ListGoodsQuery): Promise<GoodsListResponse> {
    return this.goods.list(tenant, query);
  }

  @Get('sku')
  @ApiOperation({ summary: 'Look up one item by its goods code' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findBySku(@CurrentTenant() tenant: Tenant, @Query() query: SkuQuery): Promise<GoodsResponse> {
    return this.goods.findBySku(tenant, query.key);
  }

  @Get('url')
  @ApiOperation({ summary: 'Look up one item by its goods URL' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findByUrl(@CurrentTenant() tenant: Tenant, @Query() query: UrlQuery): Promise<GoodsResponse> {
    return this.goods.findByUrl(tenant, query.key);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Register one item; refused (409) when its sku or url is already registered' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 409)
  register(@CurrentTenant() tenant: Tenant, @Body() body: RegisterGoodsDto): Promise<GoodsResponse> {
    return this.goods.register(tenant, body);
  }

  @Put()
  @ApiOperation({ summary: 'Update one item found by id (partial: absent fields keep their value; sku and url may change)' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409)
  updateById(
    @CurrentTenant() tenant: Tenant,
    @Body() body: UpdateGoodsByIdDto,
    @Query() query: RefreshMediaQuery,
  ): Promise<GoodsResponse> {
    return this.goods.updateById(tenant, body, query);
  }

  @Put('sku')
  @ApiOperation({ summary: 'Update one item found by sku (partial; url may change)' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409)
  updateBySku(
    @CurrentTenant() tenant: Tenant,
    @Body() body: UpdateGoodsBySkuDto,
    @Query() query: RefreshMediaQuery,
  ): Promise<GoodsResponse> {
    return this.goods.updateBySku(tenant, body, query);
  }

  @Put('url')
  @ApiOperation({ summary: 'Update one item found by url (partial; sku may change)' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409)
  updateByUrl(
    @CurrentTenant() tenant: Tenant,
    @Body() body: UpdateGoodsByUrlDto,
    @Query() query: RefreshMediaQuery,
  ): Promise<GoodsResponse> {
    return this.goods.updateByUrl(tenant, body, query);
  }

  @Delete('sku')
  @ApiOperation({ summary: 'Delete one item by its goods code' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteBySku(@CurrentTenant() tenant: Tenant, @Query() query: SkuQuery): Promise<DeleteResponse> {
    await this.goods.deleteBySku(tenant, query.key);
    return DELETED;
  }

  @Delete('url')
  @ApiOperation({ summary: 'Delete one item by its goods URL' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteByUrl(@CurrentTenant() tenant: Tenant, @Query() query: UrlQuery): Promise<DeleteResponse> {
    await this.goods.deleteByUrl(tenant, query.key);
    return DELETED;
  }

  @Delete(':goodsId/sku')
  @ApiOperation({ summary: 'Delete by goods code; the goodsId segment must name the item found' })
  @ApiParam({ name: 'goodsId', type: Number, format: 'int64' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteBySkuWithId(
    @CurrentTenant() tenant: Tenant,
    @IdParam('goodsId') goodsId: number,
    @Query() query: SkuQuery,
  ): Promise<DeleteResponse> {
    await this.goods.deleteBySku(tenant, query.key, goodsId);
    return DELETED;
  }

  @Delete(':goodsId/url')
  @ApiOperation({ summary: 'Delete by goods URL; the goodsId segment must name the item found' })
  @ApiParam({ name: 'goodsId', type: Number, format: 'int64' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteByUrlWithId(
    @CurrentTenant() tenant: Tenant,
    @IdParam('goodsId') goodsId: number,
    @Query() query: UrlQuery,
  ): Promise<DeleteResponse> {
    await this.goods.deleteByUrl(tenant, query.key, goodsId);
    return DELETED;
  }

  @Delete(':goodsId')
  @ApiOperation({ summary: 'Delete one item by id' })
  @ApiParam({ name: 'goodsId', type: Number, format: 'int64' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteById(
    @CurrentTenant() tenant: Tenant,
    @IdParam('goodsId') goodsId: number,
  ): Promise<DeleteResponse> {
    await this.goods.deleteById(tenant, goodsId);
    return DELETED;
  }
}
