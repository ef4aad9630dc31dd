import { currentFaults, parseFaults, setFaults } from "@platform/resilience";
import { sendJson, type HttpEndpoint } from "./http-endpoints.js";
import type { Logger } from "./logger.js";

/**
 * GET/PUT/DELETE /admin/faults on the operator port: read, replace or clear
 * the faults in force (see docs/faults.md). A bad document is refused with
 * 400 and a message naming the field; the faults in force stay unchanged.
 */
export function faultEndpoints(logger: Logger): Record<string, HttpEndpoint> {
  const put: HttpEndpoint = async (_req, res, body) => {
    let faults;
    try {
      faults = parseFaults(await body());
    } catch (e) {
      return sendJson(res, 400, { error: e instanceof Error ? e.message : String(e) });
    }
    setFaults(faults);
    logger.warn({ faults }, "faults changed");
    sendJson(res, 200, currentFaults());
  };
  return {
    "GET /admin/faults": (_req, res) => sendJson(res, 200, currentFaults()),
    "PUT /admin/faults": put,
    "POST /admin/faults": put,
    "DELETE /admin/faults": (_req, res) => {
      setFaults({});
      logger.warn("faults cleared");
      sendJson(res, 200, currentFaults());
    },
  };
}
