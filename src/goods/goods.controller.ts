import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../common/http/api-docs.decorators';
import { PositiveIntPipe } from '../common/http/positive-int.pipe';
import type { Customer } from '../customers/entities/customer.entity';
import { RegisterGoodsDto, UpdateGoodsByIdDto, UpdateGoodsBySkuDto, UpdateGoodsByUrlDto } from './dto/goods-body.dto';
import { KeyValueQuery, ListGoodsQuery } from './dto/goods-query.dto';
import { DeleteResponse, GoodsListResponse, GoodsResponse } from './dto/goods-response.dto';
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
  list(@CurrentCustomer() customer: Customer, @Query() query: ListGoodsQuery): Promise<GoodsListResponse> {
    return this.goods.list(customer, query);
  }

  @Get('sku')
  @ApiOperation({ summary: 'Look up one item by its goods code' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findBySku(@CurrentCustomer() customer: Customer, @Query() query: KeyValueQuery): Promise<GoodsResponse> {
    return this.goods.findBySku(customer, query.value);
  }

  @Get('url')
  @ApiOperation({ summary: 'Look up one item by its goods URL' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404)
  findByUrl(@CurrentCustomer() customer: Customer, @Query() query: KeyValueQuery): Promise<GoodsResponse> {
    return this.goods.findByUrl(customer, query.value);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Register one item; refused (409) when its sku or url is already registered' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 409)
  register(@CurrentCustomer() customer: Customer, @Body() body: RegisterGoodsDto): Promise<GoodsResponse> {
    return this.goods.register(customer, body);
  }

  @Put()
  @ApiOperation({ summary: 'Update one item found by id (partial: absent fields keep their value; sku and url may change)' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409)
  updateById(@CurrentCustomer() customer: Customer, @Body() body: UpdateGoodsByIdDto): Promise<GoodsResponse> {
    return this.goods.updateById(customer, body);
  }

  @Put('sku')
  @ApiOperation({ summary: 'Update one item found by sku (partial; url may change)' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409)
  updateBySku(@CurrentCustomer() customer: Customer, @Body() body: UpdateGoodsBySkuDto): Promise<GoodsResponse> {
    return this.goods.updateBySku(customer, body);
  }

  @Put('url')
  @ApiOperation({ summary: 'Update one item found by url (partial; sku may change)' })
  @ApiOkResponse({ type: GoodsResponse })
  @ApiErrors(400, 404, 409)
  updateByUrl(@CurrentCustomer() customer: Customer, @Body() body: UpdateGoodsByUrlDto): Promise<GoodsResponse> {
    return this.goods.updateByUrl(customer, body);
  }

  @Delete('sku')
  @ApiOperation({ summary: 'Delete one item by its goods code' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteBySku(@CurrentCustomer() customer: Customer, @Query() query: KeyValueQuery): Promise<DeleteResponse> {
    await this.goods.deleteBySku(customer, query.value);
    return DELETED;
  }

  @Delete('url')
  @ApiOperation({ summary: 'Delete one item by its goods URL' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteByUrl(@CurrentCustomer() customer: Customer, @Query() query: KeyValueQuery): Promise<DeleteResponse> {
    await this.goods.deleteByUrl(customer, query.value);
    return DELETED;
  }

  @Delete(':goodsId/sku')
  @ApiOperation({ summary: 'Delete by goods code; the goodsId segment must name the item found' })
  @ApiParam({ name: 'goodsId', type: Number, format: 'int64' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteBySkuWithId(
    @CurrentCustomer() customer: Customer,
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @Query() query: KeyValueQuery,
  ): Promise<DeleteResponse> {
    await this.goods.deleteBySku(customer, query.value, goodsId);
    return DELETED;
  }

  @Delete(':goodsId/url')
  @ApiOperation({ summary: 'Delete by goods URL; the goodsId segment must name the item found' })
  @ApiParam({ name: 'goodsId', type: Number, format: 'int64' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteByUrlWithId(
    @CurrentCustomer() customer: Customer,
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @Query() query: KeyValueQuery,
  ): Promise<DeleteResponse> {
    await this.goods.deleteByUrl(customer, query.value, goodsId);
    return DELETED;
  }

  @Delete(':goodsId')
  @ApiOperation({ summary: 'Delete one item by id' })
  @ApiParam({ name: 'goodsId', type: Number, format: 'int64' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async deleteById(
    @CurrentCustomer() customer: Customer,
    @Param('goodsId', PositiveIntPipe) goodsId: number,
  ): Promise<DeleteResponse> {
    await this.goods.deleteById(customer, goodsId);
    return DELETED;
  }
}
