/**
 * The bounds both files about the shipped configuration hold a platform to
 * (default-config.test.ts, alone; default-config-faults.test.ts,
 * beside other files): written once so the two cannot drift apart.
 */
import { Code } from "@connectrpc/connect";
import type { CallRecord } from "../hardening/order-load.js";

/** A call must settle within its deadline plus this: a bound against hangs, not a speed claim. */
export const settleSlackMs = 2000;
/** Callers asking again at once for orders whose outcome stayed unknown (the overload leaves hundreds). */
export const resolvers = 8;
/** What a caller may see while a dependency is slow, dead or overloaded: clear and retryable. */
export const allowed = new Set<CallRecord["code"]>(["ok", Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted]);
