/**
 * The browser example in a real browser: Debian's chromium, headless,
 * driven by puppeteer-core, loads the bundled page from its own origin and
 * calls the gateway with Connect-Web across origins, as a web app would.
 * The gateway lets that origin in (CORS_ALLOWED_ORIGINS); a page from any
 * other origin is refused by the browser itself.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import puppeteer, { type Browser, type HTTPRequest } from "puppeteer-core";
import { serveBrowserExample, type ExampleServer } from "../../examples/browser/serve.js";
import type { ExampleResult } from "../../examples/browser/result.js";
import { buildClientPackage, startTestPlatform, type TestPlatform } from "@platform/test-support";

/** Debian's chromium (CI installs it: .ci/run). */
function chromiumPath(): string | undefined {
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      return execFileSync("which", [name], { encoding: "utf8" }).trim();
    } catch {
      // not this name
    }
  }
  return undefined;
}

const executablePath = chromiumPath();
/** A developer without chromium is told so; CI (which installs it) fails instead. */
const skip = executablePath || process.env["CI"] ? false : "chromium is not installed (apt-get install chromium)";
let p: TestPlatform;
let page: ExampleServer;
let elsewhere: ExampleServer;
let browser: Browser;
before(async () => {
  if (!executablePath) return;
  await buildClientPackage();
  page = await serveBrowserExample();
  elsewhere = await serveBrowserExample();
  p = await startTestPlatform({ serviceEnv: { gateway: { CORS_ALLOWED_ORIGINS: page.origin } } });
  // --no-sandbox: the tests run as root (CI does), where chromium's sandbox refuses to start.
  browser = await puppeteer.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"] });
});
after(async () => {
  await browser?.close();
  await page?.close();
  await elsewhere?.close();
  await p?.close();
});

/** Opens the example page from `origin`, waits for it to finish, returns what it reports and the calls it made. */
async function runPage(origin: string): Promise<{ result: ExampleResult; calls: { method: string; path: string }[]; text: string }> {
  const tab = await browser.newPage();
  try {
    const calls: { method: string; path: string }[] = [];
    tab.on("request", (r: HTTPRequest) => {
      const url = new URL(r.url());
      if (url.origin === p.gatewayUrl) calls.push({ method: r.method(), path: url.pathname });
    });
    await tab.goto(`${origin}/?gateway=${encodeURIComponent(p.gatewayUrl)}`);
    await tab.waitForSelector("body[data-state=done]", { timeout: 20_000 });
    // Expressions evaluated in the page (strings: this file is compiled without the DOM's types).
    const result = (await tab.evaluate("window.exampleResult")) as ExampleResult;
    const text = (await tab.evaluate("document.body.innerText")) as string;
    return { result, calls, text };
  } finally {
    await tab.close();
  }
}

test("the page lists the products, places an order, watches its receipt turn SENT and maps an error code, over Connect-Web from an allowed origin", {
  skip,
}, async (t) => {
  assert.ok(executablePath, "chromium is not installed: .ci/run installs it");
  const { result, calls, text } = await runPage(page.origin);
  assert.deepEqual(result.products, ["COFFEE-BEANS-1KG", "FILTER-PAPER-100", "GRINDER-BURR", "KETTLE-GOOSENECK", "MUG-CERAMIC"]);
  assert.match(text, /MUG-CERAMIC: Ceramic mug, 12\.00 USD/);
  assert.ok(result.order, JSON.stringify(result));
  assert.equal(result.order.total, "2450");
  assert.deepEqual(await p.sql("SELECT id FROM orders.orders WHERE customer_id = 'browser-example'"), [{ id: result.order.id }]);
  // Its receipt, PENDING as placed, turned SENT on the page while it watched (a Connect server stream over fetch).
  assert.deepEqual(result.receiptStates, ["PENDING", "SENT"]);
  assert.match(text, /receipt: PENDING\nreceipt: SENT/);
  assert.deepEqual(result.errors, [
    { what: "unknown SKU", code: "invalid_argument", advice: 'the request is wrong (unknown sku "NO-SUCH-SKU"): fix it, do not retry' },
    {
      what: "quantity 0",
      code: "invalid_argument",
      advice: "the request is wrong (items[0].quantity: must be greater than 0 and less than or equal to 1000): fix it, do not retry",
    },
  ]);
  assert.match(text, /unknown SKU: invalid_argument/);
  // ListProducts went as a GET (no side effects: useHttpGet); PlaceOrder as POST, after a CORS preflight;
  // the order with quantity 0 never left the page (validateBeforeSending).
  const rpc = calls.filter((c) => c.method !== "OPTIONS");
  assert.deepEqual(rpc, [
    { method: "GET", path: "/checkout.v1.CheckoutService/ListProducts" },
    { method: "POST", path: "/checkout.v1.CheckoutService/PlaceOrder" },
    { method: "POST", path: "/checkout.v1.CheckoutService/WatchOrder" },
    { method: "POST", path: "/checkout.v1.CheckoutService/PlaceOrder" },
  ]);
  t.diagnostic(`preflights: ${calls.filter((c) => c.method === "OPTIONS").length}`);
});

test("from an origin the gateway does not allow, the browser refuses the answer", { skip }, async () => {
  assert.ok(executablePath, "chromium is not installed: .ci/run installs it");
  const { result } = await runPage(elsewhere.origin);
  assert.deepEqual(result.products, []);
  assert.equal(result.order, undefined);
  assert.equal(result.errors.length, 1);
  assert.equal(result.errors[0]?.what, "ListProducts");
  // fetch() rejects with a TypeError and no status: Connect-Web reports it as unknown.
  assert.equal(result.errors[0]?.code, "unknown");
});
