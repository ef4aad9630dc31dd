import { test } from "node:test";
import assert from "node:assert/strict";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { checkoutV1, ordersV1 } from "@platform/proto";
import { isReflectionService, ReflectionIndex } from "./reflection.js";

type Answer = ReturnType<ReflectionIndex["answer"]>;
const fileNames = (a: Answer) =>
  a.case === "fileDescriptorResponse" ? a.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : a;

/** What a file with buf.validate annotations imports besides its own: the rules' proto and the well-known types it uses. */
const validateImports = [
  "buf/validate/validate.proto",
  "google/protobuf/descriptor.proto",
  "google/protobuf/duration.proto",
  "google/protobuf/field_mask.proto",
  "google/protobuf/timestamp.proto",
];

test("a file comes with what it imports, and what a stream was already sent is not sent again unless asked for", () => {
  const index = new ReflectionIndex([ordersV1.OrdersService]);
  const sent = new Set<string>();
  // orders.proto imports common.proto and, for its input rules, buf/validate (which imports the well-known types it uses).
  const withImports = ["orders/v1/orders.proto", ...validateImports, "platform/common/v1/common.proto"];
  assert.deepEqual(fileNames(index.answer({ case: "fileContainingSymbol", value: "orders.v1.OrdersService" }, sent)), withImports);
  assert.deepEqual(fileNames(index.answer({ case: "fileContainingSymbol", value: "orders.v1.OrdersService" }, sent)), ["orders/v1/orders.proto"]);
  assert.deepEqual(fileNames(index.answer({ case: "fileByFilename", value: "platform/common/v1/common.proto" }, sent)), ["platform/common/v1/common.proto"]);
  // A new stream starts from nothing.
  assert.deepEqual(fileNames(index.answer({ case: "fileByFilename", value: "orders/v1/orders.proto" }, new Set())), withImports);
});

test("symbols: services, methods, messages, fields, enums and their values, with or without a leading dot", () => {
  const index = new ReflectionIndex([checkoutV1.CheckoutService]);
  assert.equal(
    index.answer({ case: "fileContainingSymbol", value: "checkout.v1.OrderStatus.ORDER_STATUS_PLACED" }, new Set()).case,
    "errorResponse",
    "enum values are siblings of their enum",
  );
  for (const symbol of [
    "checkout.v1.CheckoutService",
    "checkout.v1.CheckoutService.GetOrder",
    "checkout.v1.Money",
    "checkout.v1.Money.amount_minor",
    "checkout.v1.OrderStatus",
    "checkout.v1.ORDER_STATUS_PLACED",
    ".checkout.v1.Order",
  ]) {
    assert.deepEqual(
      fileNames(index.answer({ case: "fileContainingSymbol", value: symbol }, new Set())),
      ["checkout/v1/checkout.proto", ...validateImports],
      symbol,
    );
  }
});

test("only what the server was given is described", () => {
  const index = new ReflectionIndex([checkoutV1.CheckoutService]);
  assert.deepEqual(index.answer({ case: "listServices", value: "*" }, new Set()), {
    case: "listServicesResponse",
    value: {
      service: [
        { name: "checkout.v1.CheckoutService" },
        { name: "grpc.health.v1.Health" },
        { name: "grpc.reflection.v1.ServerReflection" },
        { name: "grpc.reflection.v1alpha.ServerReflection" },
      ],
    },
  });
  assert.deepEqual(index.answer({ case: "fileContainingSymbol", value: "orders.v1.OrdersService" }, new Set()), {
    case: "errorResponse",
    value: { errorCode: 5, errorMessage: 'symbol "orders.v1.OrdersService" not found' },
  });
  assert.deepEqual(index.answer({ case: "fileByFilename", value: "orders/v1/orders.proto" }, new Set()), {
    case: "errorResponse",
    value: { errorCode: 5, errorMessage: 'file "orders/v1/orders.proto" not found' },
  });
  assert.deepEqual(index.answer({ case: "fileContainingExtension", value: { containingType: "checkout.v1.Order", extensionNumber: 100 } }, new Set()), {
    case: "errorResponse",
    value: { errorCode: 5, errorMessage: 'extension 100 of "checkout.v1.Order" not found' },
  });
  assert.deepEqual(index.answer({ case: "allExtensionNumbersOfType", value: "orders.v1.GetOrderRequest" }, new Set()), {
    case: "errorResponse",
    value: { errorCode: 5, errorMessage: 'message type "orders.v1.GetOrderRequest" not found' },
  });
  assert.deepEqual(index.answer({ case: undefined }, new Set()), {
    case: "errorResponse",
    value: { errorCode: 3, errorMessage: "empty reflection request: set one of its message_request fields" },
  });
});

test("the reflection services, both versions, and nothing that merely starts like them", () => {
  assert.equal(isReflectionService("grpc.reflection.v1.ServerReflection"), true);
  assert.equal(isReflectionService("grpc.reflection.v1alpha.ServerReflection"), true);
  assert.equal(isReflectionService("grpc.reflection.v1.ServerReflectionX"), false);
  assert.equal(isReflectionService("grpc.health.v1.Health"), false);
  assert.equal(isReflectionService("checkout.v1.CheckoutService"), false);
});
