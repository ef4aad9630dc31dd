/**
 * The internal APIs use their own types (platform.common.v1, orders.v1.Order)
 * instead of the public checkout.v1 ones; each is a twin of a public type:
 * the same fields (number, name, kind, scalar type, cardinality), and
 * twins for its message and enum fields, recursively. That is what keeps the
 * checkout service's mapping lossless and the orders rows written as
 * checkout.v1.Order readable (buf's breaking check compares type names, so
 * it cannot see this; buf.yaml explains the exemption).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, fromBinary, toBinary, type DescEnum, type DescMessage } from "@bufbuild/protobuf";
import { checkoutV1, commonV1, ordersV1 } from "@platform/proto";
import { orderLineRequests, publicOrder, publicProduct } from "@platform/proto/public-twins";

const messageTwins: [DescMessage, DescMessage][] = [
  [commonV1.MoneySchema, checkoutV1.MoneySchema],
  [commonV1.ProductSchema, checkoutV1.ProductSchema],
  [commonV1.OrderLineRequestSchema, checkoutV1.OrderItemRequestSchema],
  [commonV1.OrderLineSchema, checkoutV1.OrderItemSchema],
  [ordersV1.OrderSchema, checkoutV1.OrderSchema],
  [ordersV1.ReceiptSchema, checkoutV1.ReceiptSchema],
];
const enumTwins: [DescEnum, DescEnum][] = [
  [ordersV1.OrderStatusSchema, checkoutV1.OrderStatusSchema],
  [ordersV1.ReceiptStateSchema, checkoutV1.ReceiptStateSchema],
];

function twinOf(internal: DescMessage | DescEnum): string | undefined {
  return [...messageTwins, ...enumTwins].find(([i]) => i.typeName === internal.typeName)?.[1].typeName;
}

/** Differences between an internal type and its public twin, as readable lines (none when they are twins). */
function differences(internal: DescMessage, pub: DescMessage): string[] {
  const out: string[] = [];
  const shape = (m: DescMessage) => new Map(m.fields.map((f) => [f.number, f]));
  const a = shape(internal);
  const b = shape(pub);
  for (const n of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(n);
    const y = b.get(n);
    if (!x || !y) {
      out.push(`${pub.typeName} field ${n}: only in ${x ? internal.typeName : pub.typeName}`);
      continue;
    }
    const at = `${pub.typeName}.${y.name} (${n})`;
    if (x.name !== y.name) out.push(`${at}: named ${x.name} inside`);
    if (x.fieldKind !== y.fieldKind) out.push(`${at}: ${x.fieldKind} inside, ${y.fieldKind} outside`);
    if (x.fieldKind === "scalar" && y.fieldKind === "scalar" && x.scalar !== y.scalar) out.push(`${at}: scalar ${x.scalar} vs ${y.scalar}`);
    if (x.fieldKind === "list" && y.fieldKind === "list" && x.listKind !== y.listKind) out.push(`${at}: list of ${x.listKind} vs ${y.listKind}`);
    const xm = x.message;
    const ym = y.message;
    if (xm && ym && twinOf(xm) !== ym.typeName) out.push(`${at}: ${xm.typeName} is not the twin of ${ym.typeName}`);
    const xe = x.enum;
    const ye = y.enum;
    if (xe && ye && twinOf(xe) !== ye.typeName) out.push(`${at}: ${xe.typeName} is not the twin of ${ye.typeName}`);
  }
  return out;
}

describe("internal types are wire twins of the public ones", () => {
  for (const [internal, pub] of messageTwins) {
    test(`${internal.typeName} = ${pub.typeName}`, () => {
      assert.deepEqual(differences(internal, pub), []);
    });
  }
  for (const [internal, pub] of enumTwins) {
    test(`${internal.typeName} = ${pub.typeName}`, () => {
      assert.deepEqual(
        internal.values.map((v) => [v.number, v.name]),
        pub.values.map((v) => [v.number, v.name]),
      );
    });
  }

  test("the check finds a difference: a field of another type, or a message that is no twin", () => {
    assert.deepEqual(differences(commonV1.MoneySchema, checkoutV1.ProductSchema).length > 0, true);
    assert.match(differences(commonV1.OrderLineSchema, checkoutV1.OrderSchema).join("\n"), /checkout\.v1\.Order\.id \(1\): named sku inside/);
  });
});

const publicOrderExample = create(checkoutV1.OrderSchema, {
  id: "2b0e6d5a-5f1e-4c44-9b0a-8f7f0a1c2d3e",
  status: checkoutV1.OrderStatus.PLACED,
  customerId: "alice",
  items: [
    {
      sku: "MUG-CERAMIC",
      name: "Ceramic mug",
      quantity: 2,
      unitPrice: { currencyCode: "USD", amountMinor: 1299n },
      lineTotal: { currencyCode: "USD", amountMinor: 2598n },
    },
    {
      sku: "TEA-GREEN",
      name: "Green tea",
      quantity: 1,
      unitPrice: { currencyCode: "USD", amountMinor: 9_007_199_254_740_993n },
      lineTotal: { currencyCode: "USD", amountMinor: 9_007_199_254_740_993n },
    },
  ],
  total: { currencyCode: "USD", amountMinor: 9_007_199_254_743_591n },
  createdAt: "2026-01-02T03:04:05.678Z",
});

describe("crossing between the internal and the public types", () => {
  test("checkout.v1.Order bytes (how orders stored responses before) decode as orders.v1.Order and map back unchanged", () => {
    const stored = toBinary(checkoutV1.OrderSchema, publicOrderExample);
    const internal = fromBinary(ordersV1.OrderSchema, stored);
    assert.equal(internal.items[1]?.unitPrice?.amountMinor, 9_007_199_254_740_993n, "int64 beyond 2^53 survives");
    assert.deepEqual(publicOrder(internal), publicOrderExample);
    assert.deepEqual(toBinary(ordersV1.OrderSchema, internal), stored, "and the bytes are the same both ways");
  });

  test("products and request lines map field by field", () => {
    const p = create(commonV1.ProductSchema, { sku: "MUG-CERAMIC", name: "Ceramic mug", unitPrice: { currencyCode: "EUR", amountMinor: 5n } });
    assert.deepEqual(
      publicProduct(p),
      create(checkoutV1.ProductSchema, { sku: "MUG-CERAMIC", name: "Ceramic mug", unitPrice: { currencyCode: "EUR", amountMinor: 5n } }),
    );
    assert.deepEqual(publicProduct(create(commonV1.ProductSchema, { sku: "X" })).unitPrice, undefined, "an absent price stays absent");
    const lines = orderLineRequests([create(checkoutV1.OrderItemRequestSchema, { sku: "A", quantity: 3 })]);
    assert.deepEqual(lines, [create(commonV1.OrderLineRequestSchema, { sku: "A", quantity: 3 })]);
  });
});
