/**
 * gRPC server reflection as outside tools use it: `buf curl` without
 * `--schema`, run from an empty directory (no proto files anywhere near it),
 * and a reflection client written independently of the server's code:
 * @grpc/grpc-js with the vendored reflection.proto loaded by
 * @grpc/proto-loader (protobufjs), nothing from connect-es. The gateway
 * describes its public API only; each internal service describes its own.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { findFreePort } from "@platform/embedded-postgres";
import { launcherForm, serviceEntry } from "@platform/launcher";
import { forwardedApis, readServiceManifests } from "@platform/registry";
import { servicesFormFromEnv, sharedPlatform, startTestPlatform, untilStarted, type SharedPlatform, type TestPlatform } from "@platform/test-support";

const run = promisify(execFile);
const buf = resolve("node_modules/.bin/buf");
/** No proto/ here: whatever buf curl learns, it learns from the server. */
const emptyDir = mkdtempSync(join(tmpdir(), "reflection-cwd-"));
// Reflection only reads (and one order of its own, customer "reflection"): the run's shared platform.
let p: SharedPlatform;
before(async () => {
  p = await sharedPlatform();
});
after(async () => {
  await p?.close();
  rmSync(emptyDir, { recursive: true, force: true });
});

async function bufCurl(args: string[]) {
  return run(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], { cwd: emptyDir });
}

describe("buf curl without --schema", () => {
  test("lists the gateway's public services and nothing internal", async () => {
    const { stdout } = await bufCurl(["--list-services", p.gatewayUrl]);
    const listed = stdout.trim().split("\n").sort();
    // Its own api, health and reflection, and each api it forwards (a service added with `npm run new-service -- NAME --public`).
    const forwarded = forwardedApis(readServiceManifests(process.cwd())).map((f) => f.api);
    assert.deepEqual(
      listed,
      [
        "checkout.v1.CheckoutService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        ...forwarded,
      ].sort(),
    );
  });

  test("lists the methods of the public API", async () => {
    const { stdout } = await bufCurl(["--list-methods", p.gatewayUrl]);
    const methods = stdout.trim().split("\n");
    assert.deepEqual(methods.filter((m) => m.startsWith("checkout.")).sort(), [
      "checkout.v1.CheckoutService/GetOrder",
      "checkout.v1.CheckoutService/ListProducts",
      "checkout.v1.CheckoutService/PlaceOrder",
      "checkout.v1.CheckoutService/WatchOrder",
    ]);
    assert.ok(methods.includes("grpc.health.v1.Health/Check"));
    assert.deepEqual(
      methods.filter((m) => /^(orders|pricing)\./.test(m)),
      [],
    );
  });

  test("calls ListProducts and PlaceOrder with the schema it got from the gateway", async () => {
    const list = JSON.parse((await bufCurl(["-d", "{}", `${p.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`])).stdout) as {
      products: { sku: string; unitPrice: { amountMinor: string } }[];
    };
    assert.ok(list.products.some((x) => x.sku === "MUG-CERAMIC" && x.unitPrice.amountMinor === "1200"));
    const body = JSON.stringify({ customerId: "reflection", items: [{ sku: "MUG-CERAMIC", quantity: 2 }] });
    const placed = JSON.parse(
      (await bufCurl(["-H", "Idempotency-Key: reflection-1", "-d", body, `${p.gatewayUrl}/checkout.v1.CheckoutService/PlaceOrder`])).stdout,
    ) as {
      order: { id: string; status: string; total: { amountMinor: string } };
    };
    assert.equal(placed.order.total.amountMinor, "2400");
    assert.equal(placed.order.status, "ORDER_STATUS_PLACED", "enum names come from the reflected schema");
  });

  test("works with the older v1alpha protocol too", async () => {
    const { stdout } = await bufCurl(["--reflect-protocol", "grpc-v1alpha", "--list-methods", p.gatewayUrl]);
    assert.match(stdout, /checkout\.v1\.CheckoutService\/PlaceOrder/);
  });

  test("cannot see or call an internal API through the gateway", async () => {
    await assert.rejects(bufCurl(["-d", "{}", `${p.gatewayUrl}/orders.v1.OrdersService/GetOrder`]), (e: { stderr: string }) => {
      assert.match(e.stderr, /failed to find service named "orders\.v1\.OrdersService"/);
      return true;
    });
  });

  test("an internal service describes its own API on its RPC port", async () => {
    const { stdout } = await bufCurl(["--list-services", p.services.orders.url]);
    assert.deepEqual(stdout.trim().split("\n").sort(), [
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "orders.v1.OrdersService",
    ]);
  });
});

describe("at an edge with authentication on and admission full", () => {
  const key = randomUUID();
  let q: TestPlatform;
  before(async () => {
    q = await startTestPlatform({
      faultInjection: true,
      serviceEnv: {
        // One request at a time and no queue; the gateway's calls to checkout hang (longer than any
        // test here), so one call fills admission until its caller lets go of it. (A 4 s hold ran
        // out on a loaded machine before the test's steps, a buf curl process among them, were done.)
        gateway: {
          AUTH_MODE: "api-key",
          AUTH_API_KEYS: `alice=${key}`,
          ADMISSION_MAX_CONCURRENT: "1",
          ADMISSION_MAX_QUEUE: "0",
          FAULTS: JSON.stringify({ dependencies: { checkout: { latencyMs: 600_000 } } }),
        },
      },
    });
  });
  after(async () => {
    await q?.close();
  });

  const listProducts = (timeoutMs: number, signal?: AbortSignal) =>
    fetch(`${q.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "connect-timeout-ms": String(timeoutMs) },
      body: "{}",
      ...(signal ? { signal } : {}),
    });

  test("reflection needs the API key, as every call does", async () => {
    await assert.rejects(ask("v1", q.gatewayUrl, [{ listServices: "" }]), (e: grpc.ServiceError) => {
      assert.equal(e.code, grpc.status.UNAUTHENTICATED);
      return true;
    });
    // buf curl sends -H headers with the call only; --reflect-header with the reflection requests.
    const { stdout } = await bufCurl(["--reflect-header", `Authorization: Bearer ${key}`, "--list-services", q.gatewayUrl]);
    assert.match(stdout, /^checkout\.v1\.CheckoutService$/m);
  });

  test("reflection is answered while admission refuses the API (exempt, as health is)", async () => {
    // The slot is held until this test lets go of its call (abort), whatever the machine's speed.
    const hold = new AbortController();
    const holding = listProducts(600_000, hold.signal);
    holding.catch(() => {}); // aborted at the end, on purpose
    try {
      // The slot is taken once the first call is in; then the API is refused at once.
      let refused: Response | undefined;
      for (let i = 0; i < 50 && refused?.status !== 429; i++) {
        await new Promise((r) => setTimeout(r, 50));
        refused = await listProducts(1000);
        await refused.arrayBuffer();
      }
      assert.equal(refused?.status, 429, "admission is full");
      const { stdout } = await bufCurl(["--reflect-header", `Authorization: Bearer ${key}`, "--list-methods", q.gatewayUrl]);
      assert.match(stdout, /^checkout\.v1\.CheckoutService\/PlaceOrder$/m);
      const still = await listProducts(1000);
      assert.equal(still.status, 429, "and still full while reflection was answered");
      await still.arrayBuffer();
    } finally {
      hold.abort();
    }
  });
});

// --- An independent reflection client: grpc-js + proto-loader over the vendored proto. ---

interface ReflectionResponse {
  listServicesResponse?: { service: { name: string }[] };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorCode: number; errorMessage: string };
  allExtensionNumbersResponse?: { baseTypeName: string; extensionNumber: number[] };
  messageResponse?: string;
}
type ReflectionRequest = Record<string, unknown>;

function reflectionClient(
  version: "v1" | "v1alpha",
  address: string,
): grpc.Client & Record<string, (...args: unknown[]) => grpc.ClientDuplexStream<ReflectionRequest, ReflectionResponse>> {
  const definition = protoLoader.loadSync(`grpc/reflection/${version}/reflection.proto`, {
    includeDirs: [resolve("proto")],
    oneofs: true,
    longs: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { reflection: Record<string, { ServerReflection: grpc.ServiceClientConstructor }> };
  };
  const Ctor = pkg.grpc.reflection[version]!.ServerReflection;
  return new Ctor(address, grpc.credentials.createInsecure()) as never;
}

/** Sends the requests one by one on one stream, collecting an answer for each. */
async function ask(version: "v1" | "v1alpha", baseUrl: string, requests: ReflectionRequest[]): Promise<ReflectionResponse[]> {
  const client = reflectionClient(version, new URL(baseUrl).host);
  try {
    const call = client["serverReflectionInfo"]!({ deadline: Date.now() + 5000 });
    const answers: ReflectionResponse[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on("data", (r: ReflectionResponse) => answers.push(r));
      call.on("error", reject);
      call.on("end", resolve);
    });
    for (const r of requests) call.write(r);
    call.end();
    await done;
    return answers;
  } finally {
    client.close();
  }
}

/** What a file with buf.validate annotations imports besides its own. */
const validateImports = [
  "buf/validate/validate.proto",
  "google/protobuf/descriptor.proto",
  "google/protobuf/duration.proto",
  "google/protobuf/field_mask.proto",
  "google/protobuf/timestamp.proto",
];

const fileNames = (r: ReflectionResponse | undefined) =>
  (r?.fileDescriptorResponse?.fileDescriptorProto ?? []).map((b) => fromBinary(FileDescriptorProtoSchema, b).name);

describe("an independent grpc-js reflection client", () => {
  for (const version of ["v1", "v1alpha"] as const) {
    test(`${version}: services, the file of a symbol, and NOT_FOUND for anything internal`, async () => {
      const [services, bySymbol, byMethod, again, internalFile, internalSymbol, extensions, empty] = await ask(version, p.gatewayUrl, [
        { listServices: "" },
        { fileContainingSymbol: "checkout.v1.CheckoutService" },
        { fileContainingSymbol: "checkout.v1.CheckoutService.PlaceOrder" },
        { fileByFilename: "checkout/v1/checkout.proto" },
        { fileByFilename: "orders/v1/orders.proto" },
        { fileContainingSymbol: "pricing.v1.PricingService" },
        { allExtensionNumbersOfType: "checkout.v1.Order" },
        {},
      ]);
      assert.ok(services?.listServicesResponse?.service.some((s) => s.name === "checkout.v1.CheckoutService"));
      assert.ok(!services?.listServicesResponse?.service.some((s) => /^(orders|pricing)\./.test(s.name)));

      // The file comes with what it imports: buf.validate's rules and the well-known types they use.
      assert.deepEqual(fileNames(bySymbol), ["checkout/v1/checkout.proto", ...validateImports]);
      const file = fromBinary(FileDescriptorProtoSchema, bySymbol!.fileDescriptorResponse!.fileDescriptorProto[0]!);
      assert.deepEqual(
        file.service[0]?.method.map((m) => [m.name, m.inputType, m.outputType]),
        [
          ["ListProducts", ".checkout.v1.ListProductsRequest", ".checkout.v1.ListProductsResponse"],
          ["PlaceOrder", ".checkout.v1.PlaceOrderRequest", ".checkout.v1.PlaceOrderResponse"],
          ["GetOrder", ".checkout.v1.GetOrderRequest", ".checkout.v1.GetOrderResponse"],
          ["WatchOrder", ".checkout.v1.WatchOrderRequest", ".checkout.v1.WatchOrderResponse"],
        ],
      );
      assert.ok(file.messageType.some((m) => m.name === "Money"));
      // A method's name finds its file; a file asked for by name comes again even though this stream was sent it.
      assert.deepEqual(fileNames(byMethod), ["checkout/v1/checkout.proto"]);
      assert.deepEqual(fileNames(again), ["checkout/v1/checkout.proto"]);

      assert.deepEqual(internalFile?.errorResponse, { errorCode: grpc.status.NOT_FOUND, errorMessage: 'file "orders/v1/orders.proto" not found' });
      assert.deepEqual(internalSymbol?.errorResponse, { errorCode: grpc.status.NOT_FOUND, errorMessage: 'symbol "pricing.v1.PricingService" not found' });
      assert.deepEqual(extensions?.allExtensionNumbersResponse, { baseTypeName: "checkout.v1.Order", extensionNumber: [] });
      assert.equal(empty?.errorResponse?.errorCode, grpc.status.INVALID_ARGUMENT);
    });
  }

  test("pricing describes pricing.v1 on its own port", async () => {
    const [services, file] = await ask("v1", p.services.pricing.url, [{ listServices: "" }, { fileContainingSymbol: "pricing.v1.PricingService" }]);
    assert.ok(services?.listServicesResponse?.service.some((s) => s.name === "pricing.v1.PricingService"));
    // pricing.proto imports the internal common types (Product, Money), not the public API: the dependency comes along, as clients need it to decode.
    assert.deepEqual(fileNames(file), ["pricing/v1/pricing.proto", ...validateImports, "platform/common/v1/common.proto"]);
  });
});

test("while a service still waits for its database, it describes its API (exempt from 'starting', as health is)", async (t) => {
  const [port, adminPort, deadDb] = [await findFreePort("127.0.0.1"), await findFreePort("127.0.0.1"), await findFreePort("127.0.0.1")];
  // Orders alone, its database address refusing connections: it listens, NOT_SERVING, and waits.
  // The form the run's platforms use (compiled under npm test, which built it first).
  const entry = serviceEntry("orders", servicesFormFromEnv() ?? launcherForm);
  const orders = spawn(process.execPath, [...(entry.endsWith(".ts") ? ["--import", "tsx"] : []), entry], {
    env: {
      ...process.env,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      DATABASE_URL: `postgres://orders@127.0.0.1:${deadDb}/platform`,
      DB_STARTUP_TIMEOUT_MS: "120000",
      LOG_LEVEL: "warn",
    },
    stdio: "ignore",
  });
  t.after(() => orders.kill("SIGKILL"));
  const url = `http://127.0.0.1:${port}`;
  await untilStarted(async () => (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => undefined))?.status === 503, "orders listening, not ready", {
    exited: () => (orders.exitCode ?? orders.signalCode ?? undefined)?.toString(),
  });

  const [services, file] = await ask("v1", url, [{ listServices: "" }, { fileContainingSymbol: "orders.v1.OrdersService" }]);
  assert.ok(services?.listServicesResponse?.service.some((s) => s.name === "orders.v1.OrdersService"));
  assert.equal(fileNames(file)[0], "orders/v1/orders.proto");
  const { stdout } = await bufCurl(["--list-methods", url]);
  assert.match(stdout, /^orders\.v1\.OrdersService\/GetOrder$/m);
  // ...while its API is still refused.
  await assert.rejects(bufCurl(["-d", '{"orderId":"x"}', `${url}/orders.v1.OrdersService/GetOrder`]), (e: { stderr: string }) => {
    assert.match(e.stderr, /"code": "unavailable"/);
    assert.match(e.stderr, /"message": "starting: waiting for the database and the receipts queue"/);
    return true;
  });
});
