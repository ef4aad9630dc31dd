/**
 * The browser example: Connect-Web (fetch) against the gateway, which lets
 * this page's origin in through CORS_ALLOWED_ORIGINS. Lists the products
 * (an HTTP GET: ListProducts has no side effects), places an order with an
 * idempotency key and a deadline, watches its receipt turn from PENDING to
 * SENT live (WatchOrder, a Connect server stream over fetch, resumed by
 * @platform/client's watchOrder if it is cut), and shows how an error code
 * is handled: one the server answers (an unknown SKU), and one the page
 * answers itself (a quantity of 0 breaks a rule declared in the proto,
 * which validateBeforeSending() checks before the request leaves).
 * The outcome is also left in `window.exampleResult` for the headless
 * browser test (test/e2e/browser-client.test.ts).
 */
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { CheckoutService, ReceiptState, idempotencyKeyHeader, validateBeforeSending, watchOrder } from "@platform/client";
import { adviceFor } from "../shared/checkout-errors.js";
import type { ExampleResult } from "./result.js";

declare global {
  interface Window {
    exampleResult: ExampleResult;
  }
}

const gateway = new URLSearchParams(location.search).get("gateway") ?? "http://127.0.0.1:8080";
const checkout = createClient(CheckoutService, createConnectTransport({ baseUrl: gateway, useHttpGet: true, interceptors: [validateBeforeSending()] }));
const result: ExampleResult = { done: false, products: [], receiptStates: [], errors: [] };
window.exampleResult = result;

const el = (id: string) => document.getElementById(id)!;
function log(text: string, error = false): void {
  const li = document.createElement("li");
  li.textContent = text;
  if (error) li.className = "error";
  el("log").append(li);
}

async function attempt<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (e) {
    const advice = adviceFor(ConnectError.from(e));
    result.errors.push({ what, code: advice.code, advice: advice.advice });
    log(`${what}: ${advice.code}: ${advice.advice}`, true);
    return undefined;
  }
}

async function main(): Promise<void> {
  el("gateway").textContent = gateway;
  const list = await attempt("ListProducts", () => checkout.listProducts({}, { timeoutMs: 3000 }));
  if (!list) return;
  for (const p of list.products) {
    const li = document.createElement("li");
    li.textContent = `${p.sku}: ${p.name}, ${(Number(p.unitPrice?.amountMinor ?? 0) / 100).toFixed(2)} ${p.unitPrice?.currencyCode}`;
    el("products").append(li);
    result.products.push(p.sku);
  }
  const first = list.products[0];
  if (!first) return;
  const placed = await attempt("PlaceOrder", () =>
    checkout.placeOrder(
      { customerId: "browser-example", items: [{ sku: first.sku, quantity: 1 }] },
      { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: crypto.randomUUID() } },
    ),
  );
  if (placed?.order) {
    const order = placed.order;
    result.order = { id: order.id, total: order.total?.amountMinor.toString() ?? "" };
    log(`order placed: ${order.id}`);
    // The receipt as placed (PENDING), then each change as it happens, until it is final.
    const receipt = (state: ReceiptState | undefined) => {
      const name = ReceiptState[state ?? ReceiptState.UNSPECIFIED];
      if (result.receiptStates.at(-1) === name) return;
      result.receiptStates.push(name);
      log(`receipt: ${name}`);
    };
    receipt(order.receipt?.state);
    await attempt("WatchOrder", async () => {
      for await (const change of watchOrder(checkout, order.id)) receipt(change.order?.receipt?.state);
    });
  }
  await attempt("unknown SKU", () =>
    checkout.placeOrder(
      { customerId: "browser-example", items: [{ sku: "NO-SUCH-SKU", quantity: 1 }] },
      { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: crypto.randomUUID() } },
    ),
  );
  await attempt("quantity 0", () =>
    checkout.placeOrder(
      { customerId: "browser-example", items: [{ sku: first.sku, quantity: 0 }] },
      { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: crypto.randomUUID() } },
    ),
  );
}

void main().finally(() => {
  result.done = true;
  document.body.dataset["state"] = "done";
});
