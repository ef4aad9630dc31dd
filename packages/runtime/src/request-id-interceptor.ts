import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { requestIdHeader } from "./headers.js";
import { requestContext } from "./request-context.js";

/** Answers every request, success or failure, with its request id (x-request-id), so a caller can quote it. */
export function requestIdInterceptor(): Interceptor {
  return (next) => async (req) => {
    const requestId = requestContext({ values: req.contextValues })?.requestId;
    if (requestId === undefined) return next(req);
    try {
      const res = await next(req);
      res.header.set(requestIdHeader, requestId);
      return res;
    } catch (e) {
      const error = ConnectError.from(e);
      error.metadata.set(requestIdHeader, requestId);
      throw error;
    }
  };
}
