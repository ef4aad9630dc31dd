/**
 * The platform's refusals carry google.rpc details end to end (docs/errors.md):
 * a request that breaks a rule declared in the proto answers
 * INVALID_ARGUMENT with a BadRequest naming the field, over Connect, gRPC-Web
 * and gRPC; and a refusal made three hops in (orders' bulkhead for pricing)
 * reaches an outside gRPC client (@grpc/grpc-js, which knows nothing of
 * connect-es) with its ErrorInfo and RetryInfo in grpc-status-details-bin.
 * grpc-js hands the trailer over as bytes: it is decoded here as a
 * google.rpc.Status, and each detail (an Any) by its type URL.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { create, createRegistry, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { anyUnpack, durationMs } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
  StatusSchema,
  errorDomain,
  refusalReason,
} from "@platform/proto/error-details";
import { eventually, metricValue, setServiceFaults, startTestPlatform, type Protocol, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;
let grpcJs: grpc.Client;
before(async () => {
  p = await startTestPlatform({
    faultInjection: true,
    serviceEnv: {
      // One slot and no queue in orders for pricing, so a second PlaceOrder
      // while the first holds the slot is a bulkhead refusal.
      orders: { PRICING_LIMIT: "fixed", PRICING_MAX_CONCURRENT: "1", PRICING_MIN_CONCURRENT: "1", PRICING_MAX_QUEUE: "0" },
      // No retry at the edge: the client sees the refusal orders made, passed up by checkout and the gateway.
      gateway: { RETRY_MAX_ATTEMPTS: "1" },
    },
  });
  grpcJs = new grpc.Client(new URL(p.gatewayUrl).host, grpc.credentials.createInsecure());
});
after(async () => {
  grpcJs?.close();
  await p?.close();
});

const detailTypes = createRegistry(ErrorInfoSchema, RetryInfoSchema, BadRequestSchema, QuotaFailureSchema);

interface GrpcOutcome {
  code: grpc.status;
  details: string;
  metadata: grpc.Metadata | undefined;
}

function grpcJsCall<I extends DescMessage, O extends DescMessage>(
  method: string,
  input: I,
  output: O,
  req: MessageInitShape<I>,
  deadlineMs = 5000,
): Promise<GrpcOutcome> {
  return new Promise((resolve) => {
    grpcJs.makeUnaryRequest(
      `/checkout.v1.CheckoutService/${method}`,
      (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
      (b: Buffer) => fromBinary(output, b),
      create(input, req),
      new grpc.Metadata(),
      { deadline: Date.now() + deadlineMs },
      (err: grpc.ServiceError | null) =>
        resolve(err ? { code: err.code, details: err.details, metadata: err.metadata } : { code: grpc.status.OK, details: "", metadata: undefined }),
    );
  });
}

/** grpc-status-details-bin, decoded as a gRPC client in any language does: google.rpc.Status, then each Any. */
function statusDetails(o: GrpcOutcome): { status: MessageShape<typeof StatusSchema>; details: { $typeName: string }[] } {
  const bin = o.metadata?.get("grpc-status-details-bin")[0];
  assert.ok(Buffer.isBuffer(bin), "grpc-status-details-bin is in the trailers");
  const status = fromBinary(StatusSchema, bin);
  return { status, details: status.details.map((any) => anyUnpack(any, detailTypes) ?? { $typeName: any.typeUrl }) };
}

function detailOf<D extends DescMessage>(details: { $typeName: string }[], schema: D): MessageShape<D> | undefined {
  return details.find((d) => d.$typeName === schema.typeName) as MessageShape<D> | undefined;
}

const zeroQuantity = () => ({ customerId: `details-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 0 }] });
const quantityViolation = [["items[0].quantity", "must be greater than 0 and less than or equal to 1000"]];

describe("PlaceOrder with quantity 0: INVALID_ARGUMENT with a BadRequest naming items[0].quantity", () => {
  for (const protocol of ["connect-json", "connect-binary", "grpc-web", "grpc"] as Protocol[]) {
    test(`over ${protocol} (connect-es)`, async () => {
      const err = await p
        .client(protocol)
        .placeOrder(zeroQuantity(), { timeoutMs: 5000 })
        .then(
          () => assert.fail("accepted"),
          (e: unknown) => ConnectError.from(e),
        );
      assert.equal(ConnectError.from(err).code, 3, err.message);
      assert.equal(refusalReason(err), "INVALID_REQUEST");
      assert.deepEqual(
        err.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
        quantityViolation,
      );
    });
  }

  test("over gRPC, read by grpc-js from grpc-status-details-bin", async () => {
    const o = await grpcJsCall("PlaceOrder", checkoutV1.PlaceOrderRequestSchema, checkoutV1.PlaceOrderResponseSchema, zeroQuantity());
    assert.equal(grpc.status[o.code], "INVALID_ARGUMENT", o.details);
    assert.equal(o.details, "items[0].quantity: must be greater than 0 and less than or equal to 1000");
    const { status, details } = statusDetails(o);
    assert.deepEqual([status.code, status.message], [grpc.status.INVALID_ARGUMENT, o.details]);
    const badRequest = detailOf(details, BadRequestSchema);
    assert.deepEqual(
      badRequest?.fieldViolations.map((v) => [v.field, v.description]),
      quantityViolation,
    );
    assert.deepEqual([detailOf(details, ErrorInfoSchema)?.reason, detailOf(details, ErrorInfoSchema)?.domain], ["INVALID_REQUEST", errorDomain]);
  });
});

test("a bulkhead refusal three hops in reaches grpc-js with ErrorInfo BULKHEAD_FULL and RetryInfo, the same delay as its pushback header", async () => {
  await setServiceFaults(p, "pricing", { db: { latencyMs: 3000 } });
  const holder = p
    .client("connect-binary")
    .placeOrder({ customerId: `details-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 10_000 })
    .catch(() => undefined);
  try {
    await eventually(
      async () => metricValue(await p.metrics("orders"), "bulkhead_in_use", { dependency: "pricing" }) === 1,
      "the first order holds orders' one slot for pricing",
    );
    const o = await grpcJsCall("PlaceOrder", checkoutV1.PlaceOrderRequestSchema, checkoutV1.PlaceOrderResponseSchema, {
      customerId: `details-${randomUUID()}`,
      items: [{ sku: "MUG-CERAMIC", quantity: 1 }],
    });
    assert.equal(grpc.status[o.code], "UNAVAILABLE", o.details);
    assert.match(o.details, /^checkout: orders: pricing \(GetPrices calls\): bulkhead full/);
    const { details } = statusDetails(o);
    const info = detailOf(details, ErrorInfoSchema);
    assert.deepEqual([info?.reason, info?.domain, info?.metadata["dependency"]], ["BULKHEAD_FULL", errorDomain, "pricing"]);
    const retry = detailOf(details, RetryInfoSchema);
    assert.ok(retry?.retryDelay, "RetryInfo with a delay");
    const delayMs = durationMs(retry.retryDelay);
    assert.ok(delayMs >= 1, `RetryInfo ${delayMs} ms`);
    assert.equal(o.metadata?.get("grpc-retry-pushback-ms")[0], String(delayMs), "the pushback header says the same");
  } finally {
    await setServiceFaults(p, "pricing", {});
    await holder;
  }
});

test("the database down, two hops in: DATABASE_UNAVAILABLE naming the database reaches grpc-js", async () => {
  await setServiceFaults(p, "pricing", { db: { unreachable: true } });
  try {
    const o = await grpcJsCall("ListProducts", checkoutV1.ListProductsRequestSchema, checkoutV1.ListProductsResponseSchema, {});
    assert.equal(grpc.status[o.code], "UNAVAILABLE", o.details);
    const info = detailOf(statusDetails(o).details, ErrorInfoSchema);
    assert.deepEqual([info?.reason, info?.metadata["database"]], ["DATABASE_UNAVAILABLE", "pricing-db"]);
  } finally {
    await setServiceFaults(p, "pricing", {});
  }
});
