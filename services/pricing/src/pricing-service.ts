import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@platform/database";
import { commonV1, pricingV1 } from "@platform/proto";

/** Most SKUs one GetPrices call may ask for (declared in pricing.proto): bounds the statement and the response. */
export const maxSkusPerCall = 100;

interface ProductRow {
  sku: string;
  name: string;
  currency_code: string;
  unit_price_minor: string;
}

function toProduct(row: ProductRow): commonV1.Product {
  return create(commonV1.ProductSchema, {
    sku: row.sku,
    name: row.name,
    unitPrice: { currencyCode: row.currency_code, amountMinor: BigInt(row.unit_price_minor) },
  });
}

/** Reads the catalogue; every statement runs under the caller's deadline (see @platform/database). */
export class PricingService implements ServiceImpl<typeof pricingV1.PricingService> {
  constructor(private readonly db: Database) {}

  async listProducts(): Promise<pricingV1.ListProductsResponse> {
    const rows = await this.db.transaction(
      (tx) => tx.query<ProductRow>("SELECT sku, name, currency_code, unit_price_minor FROM pricing.products ORDER BY sku"),
      { readOnly: true },
    );
    return create(pricingV1.ListProductsResponseSchema, { products: rows.rows.map(toProduct) });
  }

  async getPrices(req: pricingV1.GetPricesRequest): Promise<pricingV1.GetPricesResponse> {
    const unique = [...new Set(req.skus)];
    const rows = await this.db.transaction(
      (tx) => tx.query<ProductRow>("SELECT sku, name, currency_code, unit_price_minor FROM pricing.products WHERE sku = ANY($1::text[])", [unique]),
      { readOnly: true },
    );
    const bySku = new Map(rows.rows.map((r) => [r.sku, r]));
    const missing = unique.find((s) => !bySku.has(s));
    if (missing !== undefined) throw new ConnectError(`unknown sku ${JSON.stringify(missing)}`, Code.InvalidArgument);
    return create(pricingV1.GetPricesResponseSchema, { products: unique.map((s) => toProduct(bySku.get(s)!)) });
  }
}
