/**
 * The edge's retry reads google.rpc.RetryInfo as well as the pushback
 * headers: a RESOURCE_EXHAUSTED is retried only with an explicit delay
 * (resilience's retry-decision.ts), so whether a call carrying only
 * RetryInfo is retried shows whether the detail was read. Served by a real
 * Connect router (in memory) that refuses the first attempt as asked.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import { refusalDetails } from "@platform/proto/error-details";
import { RetryBudget, defaultRetryPolicy, systemClock } from "@platform/resilience";
import { retryInterceptor } from "./retry-interceptor.js";

/** ListProducts (NO_SIDE_EFFECTS, so retryable) refused once with `refusal`, then answered; how many attempts the server saw. */
async function attemptsAfterRefusal(refusal: () => ConnectError): Promise<{ attempts: number; code: Code | "ok" }> {
  let attempts = 0;
  const transport = createRouterTransport(
    (router) =>
      router.service(checkoutV1.CheckoutService, {
        listProducts: () => {
          attempts++;
          if (attempts === 1) throw refusal();
          return { products: [] };
        },
      }),
    {
      transport: {
        interceptors: [
          retryInterceptor({
            dependency: "checkout",
            policy: defaultRetryPolicy,
            budget: new RetryBudget({ percentCanRetry: 1, minRetriesPerSec: 10, ttlMs: 10_000, clock: systemClock }),
          }),
        ],
      },
    },
  );
  const client = createClient(checkoutV1.CheckoutService, transport);
  const code = await client.listProducts({}).then(
    () => "ok" as const,
    (e: unknown) => ConnectError.from(e).code,
  );
  return { attempts, code };
}

test("RESOURCE_EXHAUSTED with RetryInfo and no pushback header is retried after the delay", async () => {
  const r = await attemptsAfterRefusal(
    () => new ConnectError("overloaded", Code.ResourceExhausted, undefined, refusalDetails({ reason: "SHED_OVERLOADED", retryAfterMs: 5 })),
  );
  assert.deepEqual(r, { attempts: 2, code: "ok" });
});

test("RESOURCE_EXHAUSTED with neither RetryInfo nor a header is not retried", async () => {
  const r = await attemptsAfterRefusal(() => new ConnectError("overloaded", Code.ResourceExhausted, undefined, refusalDetails({ reason: "SHED_OVERLOADED" })));
  assert.deepEqual(r, { attempts: 1, code: Code.ResourceExhausted });
});

test('a pushback header that says "never" wins over RetryInfo', async () => {
  const r = await attemptsAfterRefusal(
    () =>
      new ConnectError(
        "overloaded",
        Code.ResourceExhausted,
        { "grpc-retry-pushback-ms": "-1" },
        refusalDetails({ reason: "SHED_OVERLOADED", retryAfterMs: 5 }),
      ),
  );
  assert.deepEqual(r, { attempts: 1, code: Code.ResourceExhausted });
});
