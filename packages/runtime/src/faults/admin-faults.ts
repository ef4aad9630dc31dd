import { createHash, timingSafeEqual } from "node:crypto";
import { currentFaults, parseFaults, setFaults } from "@platform/resilience";
import type { FaultInjectionConfig } from "./fault-injection.js";
import { sendJson, writeHead, type HttpEndpoint } from "../server/http-endpoints.js";
import type { Logger } from "../observability/logger.js";

type Req = Parameters<HttpEndpoint>[0];

/**
 * Installs fault injection as `config` says and returns the operator
 * endpoints for it: GET/PUT/POST/DELETE /admin/faults read, replace or
 * clear the faults in force (see docs/faults.md).
 *
 * - Disabled (the default): no fault is ever set in this process, and every
 *   /admin/faults request is answered 404 with how to enable it.
 * - Enabled: the FAULTS document is put in force, and each request must
 *   send `Authorization: Bearer <FAULT_INJECTION_TOKEN>`: 401 without a
 *   bearer token, 403 with a wrong one (compared in constant time).
 *
 * A bad document is refused with 400 and a message naming the field; the
 * faults in force stay unchanged.
 */
export function faultInjectionEndpoints(config: FaultInjectionConfig, logger: Logger): Record<string, HttpEndpoint> {
  if (!config.enabled) {
    setFaults({});
    const disabled: HttpEndpoint = (_req, res) =>
      sendJson(res, 404, {
        error: "fault injection is disabled in this process; start it with FAULT_INJECTION=enabled and FAULT_INJECTION_TOKEN (docs/faults.md)",
      });
    return endpoints({ get: disabled, put: disabled, clear: disabled });
  }
  setFaults(config.faults);
  if (Object.keys(config.faults).length > 0) logger.warn({ faults: config.faults }, "faults in force from start (FAULTS)");
  const expected = digest(config.token);
  const authenticated =
    (endpoint: HttpEndpoint): HttpEndpoint =>
    (req, res, body) => {
      const presented = bearerToken(req);
      if (presented === undefined) {
        writeHead(res, 401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="admin/faults"' });
        res.end(JSON.stringify({ error: "fault injection needs Authorization: Bearer <FAULT_INJECTION_TOKEN>" }));
        return;
      }
      // Digests of equal length, so neither the comparison's time nor an
      // early length check tells a caller how close its guess was.
      if (!timingSafeEqual(digest(presented), expected)) {
        logger.warn("refused /admin/faults request with a wrong token");
        return sendJson(res, 403, { error: "wrong fault injection token" });
      }
      return endpoint(req, res, body);
    };
  return endpoints({
    get: authenticated((_req, res) => sendJson(res, 200, currentFaults())),
    put: authenticated(async (_req, res, body) => {
      let faults: ReturnType<typeof parseFaults>;
      try {
        faults = parseFaults(await body());
      } catch (e) {
        return sendJson(res, 400, { error: e instanceof Error ? e.message : String(e) });
      }
      setFaults(faults);
      logger.warn({ faults }, "faults changed");
      sendJson(res, 200, currentFaults());
    }),
    clear: authenticated((_req, res) => {
      setFaults({});
      logger.warn("faults cleared");
      sendJson(res, 200, currentFaults());
    }),
  });
}

function endpoints(h: { get: HttpEndpoint; put: HttpEndpoint; clear: HttpEndpoint }): Record<string, HttpEndpoint> {
  return { "GET /admin/faults": h.get, "PUT /admin/faults": h.put, "POST /admin/faults": h.put, "DELETE /admin/faults": h.clear };
}

function bearerToken(req: Req): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== "string") return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}
