import { randomUUID } from "node:crypto";

export const requestIdHeader = "x-request-id";

/**
 * Accepts a caller's request id only when it is short and printable, so a
 * hostile header can't inject into logs; otherwise mints a fresh one.
 */
export function requestIdFrom(headers: Headers): string {
  const v = headers.get(requestIdHeader);
  if (v !== null && /^[A-Za-z0-9._:-]{1,128}$/.test(v)) return v;
  return randomUUID();
}
