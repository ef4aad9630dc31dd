/**
 * Plain pricing: the catalogue, with the statements of
 * services/pricing/src/pricing-service.ts. Serves gRPC on h2c (PORT).
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { commonV1, pricingV1 } from "@platform/proto";
import { closer, portEnv, requiredEnv, runPlainService, serveH2c } from "./plain-runtime.js";
import { plainPool, transaction } from "./plain-transaction.js";

interface ProductRow {
  sku: string;
  name: string;
  currency_code: string;
  unit_price_minor: string;
}

const toProduct = (row: ProductRow) =>
  create(commonV1.ProductSchema, {
    sku: row.sku,
    name: row.name,
    unitPrice: { currencyCode: row.currency_code, amountMinor: BigInt(row.unit_price_minor) },
  });

runPlainService("plain-pricing", async () => {
  const pool = plainPool(requiredEnv("DATABASE_URL"), "plain-pricing");
  const routes = (router: ConnectRouter) =>
    router.service(pricingV1.PricingService, {
      async listProducts() {
        const rows = await transaction(
          pool,
          (c) => c.query<ProductRow>("SELECT sku, name, currency_code, unit_price_minor FROM pricing.products ORDER BY sku"),
          { readOnly: true },
        );
        return create(pricingV1.ListProductsResponseSchema, { products: rows.rows.map(toProduct) });
      },
      async getPrices(req) {
        if (req.skus.length === 0) throw new ConnectError("skus must not be empty", Code.InvalidArgument);
        const unique = [...new Set(req.skus)];
        const rows = await transaction(
          pool,
          (c) => c.query<ProductRow>("SELECT sku, name, currency_code, unit_price_minor FROM pricing.products WHERE sku = ANY($1::text[])", [unique]),
          { readOnly: true },
        );
        const bySku = new Map(rows.rows.map((r) => [r.sku, r]));
        const missing = unique.find((s) => !bySku.has(s));
        if (missing !== undefined) throw new ConnectError(`unknown sku ${JSON.stringify(missing)}`, Code.InvalidArgument);
        return create(pricingV1.GetPricesResponseSchema, { products: unique.map((s) => toProduct(bySku.get(s)!)) });
      },
    });
  const server = await serveH2c(routes, portEnv("PORT"), requiredEnv("HOST"));
  return closer([server], () => pool.end());
});
