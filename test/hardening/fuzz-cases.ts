/**
 * What the fuzz test sends: fast-check arbitraries that describe one
 * request each (as plain data, printable in a failure report), and
 * `buildCase`, which turns a description into the exact bytes and headers
 * for the wire. Customer ids and idempotency keys are filled in at build
 * time from the case's index, so every logical order is unique and the
 * database can be reconciled with what was acknowledged.
 */
import { brotliCompressSync, gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { create, toBinary } from "@bufbuild/protobuf";
import { checkoutV1 } from "@platform/proto";
import { frame, type HttpVersion, type WireRequest } from "./wire.js";

export type Protocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";
export type Rpc = "PlaceOrder" | "ListProducts" | "GetOrder";

/** The demo catalogue (seeded by pricing's migrations). */
export const catalogue = ["MUG-CERAMIC", "COFFEE-BEANS-1KG", "FILTER-PAPER-100", "GRINDER-BURR", "KETTLE-GOOSENECK"];

export type CustomerSpec = { kind: "valid" } | { kind: "suffix"; s: string } | { kind: "empty" } | { kind: "long"; n: number };
export interface ItemSpec {
  sku: string;
  quantity: number;
}
export type PayloadSpec =
  | { kind: "order"; customer: CustomerSpec; items: ItemSpec[] }
  | { kind: "getOrder"; orderId: string }
  | { kind: "empty" }
  /** JSON text; %C% is replaced by the case's customer id. */
  | { kind: "json"; text: string }
  | { kind: "bytes"; hex: string }
  /** A valid order's protobuf bytes, then broken. */
  | { kind: "proto"; items: ItemSpec[]; mutation: ProtoMutation }
  | { kind: "oversized"; bytes: number; style: "json-string" | "random" | "repeated" };
export type ProtoMutation =
  | { kind: "truncate"; at: number }
  | { kind: "append"; hex: string }
  | { kind: "flip"; at: number; xor: number }
  | { kind: "prepend"; hex: string };
export type FramingSpec =
  | { kind: "ok" }
  | { kind: "length"; delta: number }
  | { kind: "declared"; length: number }
  | { kind: "trailing"; hex: string }
  | { kind: "twoFrames" }
  | { kind: "emptyBody" }
  | { kind: "prefixOnly"; n: number }
  | { kind: "flags"; flags: number }
  /** grpc-encoding: gzip and the compressed flag; the gzip data is ok, truncated, garbage or a bomb. */
  | { kind: "gzip"; variant: Variant };
export type Variant = "ok" | "truncated" | "garbage" | "bomb";
export type BodyEncoding = { kind: "none" } | { kind: "gzip"; variant: Variant } | { kind: "br"; variant: Variant } | { kind: "name"; name: string };
export type KeySpec = { kind: "none" } | { kind: "unique" } | { kind: "odd"; value: string };

export interface CaseSpec {
  protocol: Protocol;
  http: HttpVersion;
  rpc: Rpc;
  verb: string;
  /** Replaces the RPC's path (unknown methods and services, odd paths). */
  path: string | null;
  /** Connect GET (ListProducts, GetOrder: NO_SIDE_EFFECTS methods may use it). */
  get: boolean;
  payload: PayloadSpec;
  framing: FramingSpec;
  encoding: BodyEncoding;
  /** Replaces the protocol's content type. */
  contentType: string | null;
  timeout: { name: "grpc-timeout" | "connect-timeout-ms"; value: string } | null;
  key: KeySpec;
  extraHeaders: Record<string, string>;
}

// ---------------------------------------------------------------- arbitraries

const injection = [
  "'; DROP TABLE orders.orders; --",
  "' OR '1'='1",
  '" OR ""="',
  "1; SELECT pg_sleep(10)",
  "$(reboot)",
  "`id`",
  "<script>alert(1)</script>",
  "../../../etc/passwd",
  "%00",
  "\u0000",
  "${jndi:ldap://x/a}",
  "{{7*7}}",
  "Robert'); DROP TABLE Students;--",
  "\r\nX-Injected: 1",
  "ünïcödé",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  "日本語",
  "\u202e\u0041\u200b",
  "NULL",
  " spaced ",
];

/** Header-safe text: what node's HTTP clients accept in a value (latin1 without controls but tab). */
const headerText = (maxLength: number) =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

const customer: fc.Arbitrary<CustomerSpec> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<CustomerSpec>({ kind: "valid" }) },
  { weight: 3, arbitrary: fc.constantFrom(...injection).map((s): CustomerSpec => ({ kind: "suffix", s })) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }).map((s): CustomerSpec => ({ kind: "suffix", s })) },
  { weight: 1, arbitrary: fc.constant<CustomerSpec>({ kind: "empty" }) },
  { weight: 1, arbitrary: fc.constantFrom(123, 124, 1000, 20_000).map((n): CustomerSpec => ({ kind: "long", n })) },
);

const validItems: fc.Arbitrary<ItemSpec[]> = fc
  .uniqueArray(fc.constantFrom(...catalogue), { minLength: 1, maxLength: 3 })
  .chain((skus) => fc.tuple(...skus.map((sku) => fc.integer({ min: 1, max: 5 }).map((quantity) => ({ sku, quantity })))));

const oddSku = fc.oneof(
  fc.constantFrom("NO-SUCH-SKU", "mug-ceramic", "", "A".repeat(65), "MUG-CERAMIC ", " MUG-CERAMIC", "MUG_CERAMIC", "-"),
  fc.constantFrom(...injection).map((s) => `MUG-CERAMIC${s}`),
  fc.string({ unit: "grapheme", maxLength: 12 }),
);
const oddQuantity = fc.constantFrom(0, -1, 1001, 2_147_483_647, -2_147_483_648, 1000);
const oddItems: fc.Arbitrary<ItemSpec[]> = fc.oneof(
  fc.constant<ItemSpec[]>([]),
  fc.array(fc.record({ sku: oddSku, quantity: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 3 }),
  fc.array(fc.record({ sku: fc.constantFrom(...catalogue), quantity: oddQuantity }), { minLength: 1, maxLength: 2 }),
  // Duplicated SKUs, too many items, a huge repeated field.
  fc.constantFrom(51, 200, 2000).map((n) => Array.from({ length: n }, (_, i) => ({ sku: catalogue[i % catalogue.length]!, quantity: 1 }))),
  fc.constant<ItemSpec[]>([
    { sku: "MUG-CERAMIC", quantity: 1 },
    { sku: "MUG-CERAMIC", quantity: 2 },
  ]),
);

const jsonGarbage = fc.oneof(
  fc.constantFrom(
    "",
    "{",
    "}",
    "[]",
    "null",
    "true",
    "0",
    '""',
    "\ufeff{}",
    "{} trailing",
    "{/* comment */}",
    "{'customerId': 'x'}",
    '{"customerId": 5, "items": []}',
    '{"customerId": null, "items": null}',
    '{"customerId": "%C%", "items": {}}',
    '{"customerId": "%C%", "items": [1, 2]}',
    '{"customerId": "%C%", "items": [{"sku": 5, "quantity": 1}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": "lots"}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": 1.5}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": 1e20}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": -0}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": NaN}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": "1"}]}',
    '{"customer_id": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": 2}]}',
    '{"customerId": "fuzz-dup", "customerId": "%C%-dup", "items": [{"sku": "MUG-CERAMIC", "quantity": 1}]}',
    '{"customerId": "%C%", "items": [{"sku": "MUG-CERAMIC", "quantity": 1, "price": 0}]}',
    '{"customerId": ["%C%"], "items": [{"sku": "MUG-CERAMIC", "quantity": 1}]}',
    '{"customerId": {"$ne": null}}',
    '{"orderId": {"$gt": ""}}',
    '{"orderId": 12345}',
    "[".repeat(5000) + "]".repeat(5000),
    `${'{"a":'.repeat(3000)}1${"}".repeat(3000)}`,
    '"\\ud800"',
    '{"customerId": "%C%\\u0000", "items": [{"sku": "MUG-CERAMIC", "quantity": 1}]}',
  ),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 64 }),
);

const orderPayload: fc.Arbitrary<PayloadSpec> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("order" as const), customer: fc.constant<CustomerSpec>({ kind: "valid" }), items: validItems }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("order" as const), customer, items: fc.oneof(validItems, oddItems) }) },
  { weight: 3, arbitrary: jsonGarbage.map((text): PayloadSpec => ({ kind: "json", text })) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("proto" as const),
      items: validItems,
      mutation: fc.oneof(
        fc.nat({ max: 40 }).map((at): ProtoMutation => ({ kind: "truncate", at })),
        fc
          .constantFrom(
            "08",
            "0801",
            "15ffffffff",
            "12ffffffffffffffffffff01",
            "0a7f41",
            "0a02fffe",
            "0b",
            "0c",
            "0001",
            "f8ffffff0f01",
            "120310ff",
            "1200",
            "7a00",
          )
          .map((hex): ProtoMutation => ({ kind: "append", hex })),
        fc.constantFrom("0a02fffe", "12ffffffff0f", "0a80808080808080808001", "ff").map((hex): ProtoMutation => ({ kind: "prepend", hex })),
        fc.record({ kind: fc.constant("flip" as const), at: fc.nat({ max: 40 }), xor: fc.integer({ min: 1, max: 255 }) }),
      ),
    }),
  },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b): PayloadSpec => ({ kind: "bytes", hex: Buffer.from(b).toString("hex") })) },
  { weight: 1, arbitrary: fc.constant<PayloadSpec>({ kind: "empty" }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("oversized" as const),
      bytes: fc.constantFrom(70_000, 300_000, 1_100_000),
      style: fc.constantFrom("json-string" as const, "random" as const, "repeated" as const),
    }),
  },
);

const getOrderPayload: fc.Arbitrary<PayloadSpec> = fc.oneof(
  fc.uuid().map((orderId): PayloadSpec => ({ kind: "getOrder", orderId })),
  fc
    .constantFrom("not-a-uuid", "", "00000000-0000-0000-0000-000000000000", "' OR 1=1 --", "X".repeat(5000), "%", "ÆØÅ")
    .map((orderId): PayloadSpec => ({ kind: "getOrder", orderId })),
  jsonGarbage.map((text): PayloadSpec => ({ kind: "json", text })),
  fc.uint8Array({ maxLength: 32 }).map((b): PayloadSpec => ({ kind: "bytes", hex: Buffer.from(b).toString("hex") })),
);

const framing: fc.Arbitrary<FramingSpec> = fc.oneof(
  { weight: 14, arbitrary: fc.constant<FramingSpec>({ kind: "ok" }) },
  {
    weight: 2,
    arbitrary: fc.oneof(fc.integer({ min: -5, max: -1 }), fc.integer({ min: 1, max: 2000 })).map((delta): FramingSpec => ({ kind: "length", delta })),
  },
  { weight: 1, arbitrary: fc.constantFrom(0xffffffff, 0x7fffffff, 65_537, 0).map((length): FramingSpec => ({ kind: "declared", length })) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 8 }).map((b): FramingSpec => ({ kind: "trailing", hex: Buffer.from(b).toString("hex") })) },
  { weight: 1, arbitrary: fc.constant<FramingSpec>({ kind: "twoFrames" }) },
  { weight: 1, arbitrary: fc.constant<FramingSpec>({ kind: "emptyBody" }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }).map((n): FramingSpec => ({ kind: "prefixOnly", n })) },
  // Bit 0 (compressed) without grpc-encoding: INTERNAL, as the gRPC compression spec says (fuzz-oracle.ts).
  { weight: 1, arbitrary: fc.constantFrom(0x01, 0x02, 0x03, 0x04, 0x40, 0x80, 0xfe, 0xff).map((flags): FramingSpec => ({ kind: "flags", flags })) },
  { weight: 2, arbitrary: fc.constantFrom<Variant>("ok", "truncated", "garbage", "bomb").map((variant): FramingSpec => ({ kind: "gzip", variant })) },
);

const bodyEncoding: fc.Arbitrary<BodyEncoding> = fc.oneof(
  { weight: 16, arbitrary: fc.constant<BodyEncoding>({ kind: "none" }) },
  { weight: 2, arbitrary: fc.constantFrom<Variant>("ok", "truncated", "garbage", "bomb").map((variant): BodyEncoding => ({ kind: "gzip", variant })) },
  { weight: 1, arbitrary: fc.constantFrom<Variant>("ok", "truncated", "garbage").map((variant): BodyEncoding => ({ kind: "br", variant })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("compress", "deflate", "identity", "gzip, br", "", "x-unknown").map((name): BodyEncoding => ({ kind: "name", name })),
  },
);

const wrongContentType = fc.constantFrom(
  "text/plain",
  "application/xml",
  "",
  "application/json; charset=utf-16",
  "application/json; charset=utf-8",
  "APPLICATION/JSON",
  "application/json;;;",
  "application/proto",
  "application/protobuf",
  "application/connect+json",
  "application/connect+proto",
  "application/grpc",
  "application/grpc+json",
  "application/grpc+xml",
  "application/grpc-web",
  "application/grpc-web+json",
  "application/grpc-web-text",
  "multipart/form-data; boundary=x",
  "application/x-www-form-urlencoded",
);

const timeoutValue = fc.oneof(
  fc.constantFrom("5000", "3S", "2500m", "30000", "4000000u", "3000000000n", "1H", "1M"),
  fc.constantFrom(
    "-1",
    "abc",
    "1.5",
    "0",
    "1",
    "99999999999",
    "1e3",
    " 100",
    "0x10",
    "",
    Buffer.from("٣٠٠", "utf8").toString("latin1"),
    "+5",
    "1S",
    "-1S",
    "1x",
    "1.5S",
    "0n",
    "1n",
    "99999999H",
    "100000000H",
    "abcS",
    "1m",
    "10m",
    "50m",
    "100m",
    "S",
    "5 S",
  ),
  headerText(12),
);

const key: fc.Arbitrary<KeySpec> = fc.oneof(
  { weight: 10, arbitrary: fc.constant<KeySpec>({ kind: "none" }) },
  { weight: 5, arbitrary: fc.constant<KeySpec>({ kind: "unique" }) },
  {
    weight: 3,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          "",
          "k".repeat(256),
          "k".repeat(10_000),
          "has space",
          "clé",
          Buffer.from("日本語キー", "utf8").toString("latin1"),
          "\t",
          "tab\there",
          "a\u00ff",
        ),
        headerText(40),
      )
      .map((value): KeySpec => ({ kind: "odd", value })),
  },
);

const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 10, arbitrary: fc.constant({}) },
  {
    weight: 3,
    arbitrary: fc.dictionary(
      fc.constantFrom(
        "connect-protocol-version",
        "x-criticality",
        "x-request-id",
        "x-platform-arrival-ms",
        "grpc-accept-encoding",
        "accept-encoding",
        "connect-accept-encoding",
        "grpc-retry-pushback-ms",
        "x-user-agent",
        "grpc-message-type",
      ),
      fc.oneof(fc.constantFrom("1", "2", "", "sheddable", "critical", "-1", "0", "1e309", "gzip", "x".repeat(3000)), headerText(30)),
      { maxKeys: 3 },
    ),
  },
);

const oddPath = fc.constantFrom(
  "/checkout.v1.CheckoutService/Nope",
  "/checkout.v1.CheckoutService/",
  "/checkout.v1.CheckoutService",
  "/nope.v1.Nope/PlaceOrder",
  "/checkout.v1.CheckoutService/PlaceOrder/extra",
  "/checkout.v1.CheckoutService/PlaceOrder?x=1&y",
  "//checkout.v1.CheckoutService/PlaceOrder",
  "/checkout.v1.checkoutservice/placeorder",
  "/%2e%2e/%2e%2e/etc/passwd",
  "/orders.v1.OrdersService/CreateOrder",
  "/grpc.health.v1.Health/Check",
  // (Not Watch: a valid Watch is a stream that stays open by design.)
  "/grpc.health.v1.Health/Nope",
  "/",
  "/metrics",
  "/admin/faults",
  `/${"a".repeat(2000)}`,
);

export const caseArbitrary: fc.Arbitrary<CaseSpec> = fc
  .record({
    protocol: fc.constantFrom<Protocol>("connect-json", "connect-binary", "grpc", "grpc-web"),
    rpc: fc.oneof(
      { weight: 13, arbitrary: fc.constant<Rpc>("PlaceOrder") },
      { weight: 3, arbitrary: fc.constant<Rpc>("ListProducts") },
      { weight: 4, arbitrary: fc.constant<Rpc>("GetOrder") },
    ),
    h2: fc.integer({ min: 0, max: 9 }),
    verb: fc.oneof({ weight: 30, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: fc.constantFrom("PUT", "DELETE", "PATCH", "OPTIONS", "GET") }),
    path: fc.oneof({ weight: 19, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: oddPath }),
    get: fc.integer({ min: 0, max: 9 }),
    framing,
    encoding: bodyEncoding,
    contentType: fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: wrongContentType }),
    timeout: fc.option(fc.record({ name: fc.constantFrom("grpc-timeout" as const, "connect-timeout-ms" as const), value: timeoutValue }), { freq: 2 }),
    key,
    extraHeaders,
  })
  .chain((c) =>
    (c.rpc === "PlaceOrder"
      ? orderPayload
      : c.rpc === "GetOrder"
        ? getOrderPayload
        : fc.constantFrom<PayloadSpec>({ kind: "empty" }, { kind: "json", text: '{"x": 1}' }, { kind: "bytes", hex: "0801" })
    ).map((payload): CaseSpec => {
      const grpcish = c.protocol === "grpc" || c.protocol === "grpc-web";
      // gRPC is HTTP/2 (h1 sometimes: the server should cope); gRPC-Web and Connect JSON mostly HTTP/1.1.
      const http: HttpVersion =
        c.protocol === "grpc" ? (c.h2 === 0 ? "h1" : "h2") : c.protocol === "connect-binary" ? (c.h2 < 5 ? "h1" : "h2") : c.h2 < 7 ? "h1" : "h2";
      return {
        protocol: c.protocol,
        http,
        rpc: c.rpc,
        verb: c.verb,
        path: c.path,
        get: !grpcish && c.rpc !== "PlaceOrder" && c.get === 0,
        payload,
        framing: grpcish ? c.framing : { kind: "ok" },
        encoding: grpcish ? { kind: "none" } : c.encoding,
        contentType: c.contentType,
        timeout: c.timeout,
        key: c.key,
        extraHeaders: c.extraHeaders,
      };
    }),
  );

// ---------------------------------------------------------------- building

export interface BuiltCase {
  request: WireRequest;
  /** The customer id the body carries, when it carries one we made up. */
  customerId?: string;
  /** A structured order we can resend to resolve an uncertain outcome. */
  order?: { customerId: string; items: ItemSpec[] };
  idempotencyKey?: string;
}

const rpcPath = (rpc: string) => `/checkout.v1.CheckoutService/${rpc}`;

function customerIdOf(spec: CustomerSpec, tag: string): string {
  switch (spec.kind) {
    case "valid":
      return `fuzz-${tag}`;
    case "suffix":
      return `fuzz-${tag}-${spec.s}`;
    case "empty":
      return "";
    case "long":
      return `fuzz-${tag}-${"x".repeat(spec.n)}`;
  }
}

function messageBytes(spec: CaseSpec, binary: boolean, tag: string): { bytes: Buffer; customerId?: string; order?: { customerId: string; items: ItemSpec[] } } {
  const p = spec.payload;
  switch (p.kind) {
    case "order": {
      const customerId = customerIdOf(p.customer, tag);
      const msg = { customerId, items: p.items };
      const bytes = binary
        ? Buffer.from(toBinary(checkoutV1.PlaceOrderRequestSchema, create(checkoutV1.PlaceOrderRequestSchema, msg)))
        : Buffer.from(JSON.stringify(msg));
      return { bytes, customerId, order: msg };
    }
    case "getOrder":
      return {
        bytes: binary
          ? Buffer.from(toBinary(checkoutV1.GetOrderRequestSchema, create(checkoutV1.GetOrderRequestSchema, { orderId: p.orderId })))
          : Buffer.from(JSON.stringify({ orderId: p.orderId })),
      };
    case "empty":
      return { bytes: binary ? Buffer.alloc(0) : Buffer.from("{}") };
    case "json": {
      const customerId = `fuzz-${tag}`;
      return { bytes: Buffer.from(p.text.replaceAll("%C%", customerId)), customerId };
    }
    case "bytes":
      return { bytes: Buffer.from(p.hex, "hex") };
    case "proto": {
      const customerId = `fuzz-${tag}`;
      let b = Buffer.from(toBinary(checkoutV1.PlaceOrderRequestSchema, create(checkoutV1.PlaceOrderRequestSchema, { customerId, items: p.items })));
      const m = p.mutation;
      if (m.kind === "truncate") b = b.subarray(0, Math.min(m.at, Math.max(0, b.length - 1)));
      else if (m.kind === "append") b = Buffer.concat([b, Buffer.from(m.hex, "hex")]);
      else if (m.kind === "prepend") b = Buffer.concat([Buffer.from(m.hex, "hex"), b]);
      else {
        // Only past the customer id (field 1: tag, length, bytes): a flipped id would be another customer's order.
        const from = 2 + Buffer.byteLength(customerId);
        const at = from + (m.at % Math.max(1, b.length - from));
        if (at < b.length) b[at] = b[at]! ^ m.xor;
      }
      // Some mutations still parse (an appended unknown field): outcomes decide, not intentions.
      return { bytes: b, customerId };
    }
    case "oversized": {
      const customerId = `fuzz-${tag}`;
      if (p.style === "random") return { bytes: randomBytes(p.bytes), customerId };
      if (p.style === "repeated") {
        const items = Array.from({ length: Math.ceil(p.bytes / 30) }, (_, i) => ({ sku: `SKU-${i}`, quantity: 1 }));
        const msg = { customerId, items };
        return {
          bytes: binary
            ? Buffer.from(toBinary(checkoutV1.PlaceOrderRequestSchema, create(checkoutV1.PlaceOrderRequestSchema, msg)))
            : Buffer.from(JSON.stringify(msg)),
          customerId,
        };
      }
      const msg = { customerId: `${customerId}-${"y".repeat(p.bytes)}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] };
      return {
        bytes: binary
          ? Buffer.from(toBinary(checkoutV1.PlaceOrderRequestSchema, create(checkoutV1.PlaceOrderRequestSchema, msg)))
          : Buffer.from(JSON.stringify(msg)),
        customerId,
      };
    }
  }
}

function compressVariant(data: Buffer, variant: Variant, algo: "gzip" | "br"): Buffer {
  if (variant === "garbage") return Buffer.from("definitely not compressed data");
  if (variant === "bomb") return gzipSync(Buffer.alloc(8 * 1024 * 1024));
  const z = algo === "gzip" ? gzipSync(data) : brotliCompressSync(data);
  return variant === "truncated" ? z.subarray(0, Math.max(2, z.length - 5)) : z;
}

function envelope(msg: Buffer, f: FramingSpec): Buffer {
  switch (f.kind) {
    case "ok":
      return frame(msg);
    case "length":
      return frame(msg, 0, Math.max(0, msg.length + f.delta));
    case "declared":
      return frame(msg, 0, f.length);
    case "trailing":
      return Buffer.concat([frame(msg), Buffer.from(f.hex, "hex")]);
    case "twoFrames":
      return Buffer.concat([frame(msg), frame(msg)]);
    case "emptyBody":
      return Buffer.alloc(0);
    case "prefixOnly":
      return frame(msg).subarray(0, f.n);
    case "flags":
      return frame(msg, f.flags);
    case "gzip":
      return frame(compressVariant(msg, f.variant, "gzip"), 1);
  }
}

/** The request for case number `index` of run `runTag`. */
export function buildCase(spec: CaseSpec, runTag: string, index: number): BuiltCase {
  const tag = `${runTag}-${index}`;
  const binary = spec.protocol !== "connect-json";
  const { bytes: msg, customerId, order } = messageBytes(spec, binary, tag);
  const headers: Record<string, string> = {};
  let body: Buffer;
  let path = spec.path ?? rpcPath(spec.rpc);
  let method = spec.verb;

  switch (spec.protocol) {
    case "connect-json":
    case "connect-binary": {
      headers["content-type"] = binary ? "application/proto" : "application/json";
      if (spec.get && spec.verb === "POST") {
        method = "GET";
        const q = binary
          ? `encoding=proto&base64=1&message=${encodeURIComponent(msg.toString("base64url"))}`
          : `encoding=json&message=${encodeURIComponent(msg.toString("utf8"))}`;
        path = `${path}?${q}`;
        body = Buffer.alloc(0);
        delete headers["content-type"];
        break;
      }
      const enc = spec.encoding;
      if (enc.kind === "gzip" || enc.kind === "br") {
        headers["content-encoding"] = enc.kind;
        body = compressVariant(msg, enc.variant, enc.kind);
      } else {
        if (enc.kind === "name") headers["content-encoding"] = enc.name;
        body = msg;
      }
      break;
    }
    case "grpc":
    case "grpc-web":
      headers["content-type"] = spec.protocol === "grpc" ? "application/grpc" : "application/grpc-web+proto";
      if (spec.protocol === "grpc") headers["te"] = "trailers";
      if (spec.framing.kind === "gzip") headers["grpc-encoding"] = "gzip";
      body = envelope(msg, spec.framing);
      break;
  }
  if (spec.contentType !== null) headers["content-type"] = spec.contentType;
  if (spec.timeout) headers[spec.timeout.name] = spec.timeout.value;
  let idempotencyKey: string | undefined;
  if (spec.key.kind === "unique") idempotencyKey = `key-${tag}`;
  else if (spec.key.kind === "odd") idempotencyKey = spec.key.value;
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
  for (const [k, v] of Object.entries(spec.extraHeaders)) headers[k] = v;
  // HTTP/2 forbids connection-specific headers; "te" may only be "trailers".
  if (spec.http === "h2") for (const k of ["connection", "keep-alive", "transfer-encoding", "upgrade"]) delete headers[k];

  return {
    request: { http: spec.http, method, path, headers, body },
    ...(customerId !== undefined ? { customerId } : {}),
    ...(order && spec.payload.kind === "order" ? { order } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  };
}

/** A one-line description of a case for failure reports. */
export function describeCase(spec: CaseSpec): string {
  return JSON.stringify(spec, (_k, v: unknown) => (typeof v === "string" && v.length > 80 ? `${v.slice(0, 60)}…(${v.length} chars)` : v));
}

// ---------------------------------------------------------------- coverage

/**
 * The classes of hostile input a case belongs to, one per dimension of the
 * grammar above (and per variant within a kind): what the fuzz test's
 * coverage check counts, so that fewer requests never means a class of
 * input left out.
 */
export function caseClasses(spec: CaseSpec): string[] {
  const p = spec.payload;
  const out = [
    `transport ${spec.protocol}/${spec.http}`,
    `rpc ${spec.rpc}`,
    `verb ${spec.verb === "POST" ? "POST" : "other"}`,
    `path ${spec.path === null ? "the rpc's" : "odd"}`,
    `connect GET ${spec.get}`,
    `payload ${p.kind}`,
    `framing ${spec.framing.kind}`,
    `encoding ${spec.encoding.kind}`,
    `content type ${spec.contentType === null ? "the protocol's" : "wrong"}`,
    `timeout ${spec.timeout?.name ?? "none"}`,
    `key ${spec.key.kind}`,
    `extra headers ${Object.keys(spec.extraHeaders).length > 0 ? "some" : "none"}`,
  ];
  if (p.kind === "order") out.push(`customer ${p.customer.kind}`);
  if (p.kind === "proto") out.push(`proto mutation ${p.mutation.kind}`);
  if (p.kind === "oversized") out.push(`oversized ${p.style}`);
  if (spec.framing.kind === "gzip") out.push(`framing gzip ${spec.framing.variant}`);
  if (spec.encoding.kind === "gzip" || spec.encoding.kind === "br") out.push(`encoding ${spec.encoding.kind} ${spec.encoding.variant}`);
  return out;
}

const transports = ["connect-json", "connect-binary", "grpc", "grpc-web"].flatMap((p) => [`transport ${p}/h1`, `transport ${p}/h2`]);
const variants = ["ok", "truncated", "garbage", "bomb"];

/** Every class `caseArbitrary` generates (br has no bomb variant): the list the coverage check holds the run to. */
export const everyCaseClass: readonly string[] = [
  ...transports,
  ...["PlaceOrder", "ListProducts", "GetOrder"].map((r) => `rpc ${r}`),
  "verb POST",
  "verb other",
  "path the rpc's",
  "path odd",
  "connect GET true",
  "connect GET false",
  ...["order", "getOrder", "empty", "json", "bytes", "proto", "oversized"].map((k) => `payload ${k}`),
  ...["ok", "length", "declared", "trailing", "twoFrames", "emptyBody", "prefixOnly", "flags", "gzip"].map((k) => `framing ${k}`),
  ...["none", "gzip", "br", "name"].map((k) => `encoding ${k}`),
  "content type the protocol's",
  "content type wrong",
  ...["none", "grpc-timeout", "connect-timeout-ms"].map((k) => `timeout ${k}`),
  ...["none", "unique", "odd"].map((k) => `key ${k}`),
  "extra headers none",
  "extra headers some",
  ...["valid", "suffix", "empty", "long"].map((k) => `customer ${k}`),
  ...["truncate", "append", "flip", "prepend"].map((k) => `proto mutation ${k}`),
  ...["json-string", "random", "repeated"].map((k) => `oversized ${k}`),
  ...variants.map((v) => `framing gzip ${v}`),
  ...variants.map((v) => `encoding gzip ${v}`),
  ...variants.filter((v) => v !== "bomb").map((v) => `encoding br ${v}`),
];
