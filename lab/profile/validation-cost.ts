/**
 * What checking a request against the rules declared in its proto costs
 * (@platform/proto/validation: protovalidate with the schema's patterns
 * compiled once), per message, for the requests one PlaceOrder sends down
 * the chain: the gateway's and checkout's PlaceOrderRequest, orders'
 * CreateOrderRequest and pricing's GetPricesRequest, each with two lines
 * as the bench sends them. Wall time in a hot loop, after a warm-up.
 *
 *   node --import tsx lab/profile/validation-cost.ts [messages per method]
 */
import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { checkoutV1, ordersV1, pricingV1 } from "@platform/proto";
import { requestValidator } from "@platform/proto/validation";

const n = Number(process.argv[2] ?? 100_000);
if (!Number.isInteger(n) || n <= 0) throw new Error("usage: validation-cost.ts [messages per method]");

const items = [
  { sku: "SKU-001", quantity: 2 },
  { sku: "SKU-003", quantity: 1 },
];
const requests: Array<[DescMessage, Message]> = [
  [checkoutV1.PlaceOrderRequestSchema, create(checkoutV1.PlaceOrderRequestSchema, { customerId: "customer-12", items })],
  [
    ordersV1.CreateOrderRequestSchema,
    create(ordersV1.CreateOrderRequestSchema, { idempotencyKey: "2f1c7a3e-1b7d-4d7a-9e3f-8a4b2c1d0e9f", customerId: "customer-12", items }),
  ],
  [pricingV1.GetPricesRequestSchema, create(pricingV1.GetPricesRequestSchema, { skus: items.map((i) => i.sku) })],
];

const validator = requestValidator();
const rows: Record<string, number> = {};
for (const [schema, message] of requests) {
  if (validator.validate(schema, message).kind !== "valid") throw new Error(`${schema.typeName}: the sample breaks its own rules`);
  for (let i = 0; i < n / 5; i++) validator.validate(schema, message);
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) validator.validate(schema, message);
  rows[schema.typeName] = Math.round(Number(process.hrtime.bigint() - started) / n / 10) / 100;
}
console.log(JSON.stringify({ usPerMessage: rows }));
