/**
 * Every workaround this platform still carries for connect-es
 * (@connectrpc/connect and connect-node 2.3.0), in one place: what it works
 * around, where the code is, what upstream change it waits for, and how to
 * tell that it can go. Reports written to be filed upstream, with a minimal
 * reproduction each, are in docs/upstream/README.md.
 *
 * 1. The patch (patches/@connectrpc+connect+2.3.0.patch, applied by
 *    patch-package at `npm install`; patches/README.md explains each hunk):
 *    a. a request body that is not valid protobuf is answered INVALID_ARGUMENT,
 *       not INTERNAL (serialization.js);
 *    b. grpc-message is percent-encoded as the gRPC spec says, which also
 *       answers an error message holding a lone UTF-16 surrogate instead of
 *       leaving the call unanswered (trailer-status.js).
 *    c. and d. (with patches/@connectrpc+connect-node+2.3.0.patch) no error
 *       object is made on a call's success path: the handler context's and a
 *       client call's reason-less aborts end with one shared DOMException, and
 *       connect-node's response sentinel makes no ConnectError when it closes.
 *       Performance only: an install without them is slower, not wrong, so
 *       `checkConnectPatch()` does not look for them;
 *       connect-success-path.spec.ts does.
 *    e. connect-es's async generators run natively: the seven ESM files that
 *       ship TypeScript's ES2017 emulation of them are replaced by the same
 *       sources (patches/connect-es-2.3.0/src) compiled for ES2018
 *       (scripts/connect-es-retarget.ts). Performance only, like c and d;
 *       test/connect-es-retarget.test.ts checks it.
 *    Waits for: upstream fixes of docs/upstream reports 1-5 (not filed yet).
 *    Can go when: docs/upstream/connect-es-grpc-repro.mjs prints grpc-status 3
 *    for cases 1 and 3 and the unescaped message for case 2 on a release
 *    without the patch. `checkConnectPatch()` below and the fuzz's "connect-es,
 *    as patched" tests fail the day the patch no longer applies.
 *
 * 2. A truncated gzip/brotli request body answered INVALID_ARGUMENT, not
 *    INTERNAL (request-compression.ts): connect-node's wrapZLibErrors maps
 *    Z_DATA_ERROR to InvalidArgument but Z_BUF_ERROR ("unexpected end of
 *    file") to Internal, still in 2.3.0.
 *    Can go when: compression.js's wrapZLibErrors classifies Z_BUF_ERROR as
 *    InvalidArgument (request-compression.spec.ts then passes without it).
 *
 * 3. The request watchdog (request-watchdog.ts `watchRequest`, with
 *    error-response.ts `writeRpcError` and grpc-message.ts, which it needs to
 *    answer outside Connect): connect-node reads a request body without
 *    looking at the deadline, so a client that sends headers and stalls
 *    (slowloris) would hold its admission slot and stream until the
 *    connection dies. The watchdog answers DEADLINE_EXCEEDED at the deadline.
 *    Everything else refused before a handler (auth, rate limit,
 *    "starting", admission refusals) is thrown from Connect's
 *    `requestGate` (request-gate.ts) and written by Connect in each protocol's
 *    own form.
 *    Can go when: connect-node aborts a body read when the handler context's
 *    signal aborts (fuzz.test.ts "a request whose body never arrives" passes
 *    without `watchRequest`).
 *
 * 4. Early answers end the client's upload (request-watchdog.ts
 *    `endUnreadBody`, armed by the watchdog and for health checks): an
 *    answer given before the body was read resets the HTTP/2 stream with
 *    CANCEL once the trailers are out, and on HTTP/1.1 discards the rest of a
 *    paused body or closes a connection whose request was destroyed.
 *    connect-node 2.3 now does the same for the answers it writes (NO_ERROR
 *    reset, HTTP/1.1 drain up to 256 KiB); ours stays for the watchdog's own
 *    answers, and runs first with CANCEL because on Node 20 a NO_ERROR reset
 *    was measured to wait until the upload ended (not re-measured on 22/24).
 *    Can go with 3, once the fuzz's oversized-body cases and
 *    request-watchdog.spec.ts pass with connect-node's handling alone.
 *
 * 5. Downstream errors are mapped at each hop (downstream-error.ts): no
 *    longer to keep a dependency's wire headers out of our response (2.2
 *    stopped relaying the metadata of wire errors, connectrpc/connect-es
 *    #1717), but as policy: our own deadline is DEADLINE_EXCEEDED even when
 *    HTTP/2 reported a reset, a REFUSED_STREAM is marked never processed (safe
 *    to retry), a dependency's CANCEL or lost connection is UNAVAILABLE.
 *    Not a workaround any more; listed so nobody looks for one.
 *
 * 6. Our own Node adapter (connect-adapter.ts `createRpcAdapter`, in place of
 *    `connectNodeAdapter`): connect-es's protocol handlers parse the timeout
 *    header themselves (parseTimeout in createHandler) and arm a timer of
 *    their own for it (createHandlerContext -> createDeadlineSignal), with
 *    no option to take a deadline already parsed. serve() needs the
 *    deadline before Connect runs (the request gate queues against it, the
 *    watchdog answers at it), so without this every hop parsed each header
 *    twice and armed two timers for one deadline. The adapter, made of
 *    connect-node's exported pieces (universalRequestFromNodeRequest,
 *    universalResponseToNodeResponse) and otherwise what connectNodeAdapter
 *    2.3.0 does, hides the timeout headers from Connect and gives it, as the
 *    request's signal, one that also ends at the request context's deadline
 *    (with Connect's own "the operation timed out" DEADLINE_EXCEEDED). The
 *    costs: `ctx.timeoutMs()` is undefined on serve()'s routes (the deadline
 *    is `requestContext(ctx)`), and the request gate writes the refusal of a
 *    malformed or oversized header in Connect's words (request-context.ts
 *    `timeoutRefusal`; connect-compat.spec.ts compares it with connect-es's
 *    own parseTimeout, value by value).
 *    Waits for: a way to hand a connect-es server handler the deadline (an
 *    absolute deadline or a deadline signal on UniversalServerRequest, or a
 *    `contextValues`-time hook), to be reported upstream (docs/upstream).
 *    Can go when: hop-deadline.spec.ts passes with connectNodeAdapter given
 *    that option.
 *
 * Removed with the move to 2.3.0: the patch hunk answering a compressed frame
 * without a declared encoding INVALID_ARGUMENT (the gRPC compression spec says
 * INTERNAL, as connect-es does); the hand-written refusals of admission, edge
 * auth, rate limit and start-up (now `requestGate`); the "never rethrow a
 * downstream ConnectError" rule (#1717); HTTP/2 keepalive pings were off
 * because `Http2SessionManager.verify()` could hang (fixed in 2.2, #1746):
 * dependency clients now ping (dependency-client.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { createMethodSerializationLookup } from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { healthV1 } from "@platform/proto";
import type { Logger } from "../observability/logger.js";
import { reportUnpatched } from "../config/unpatched-dependency.js";

/**
 * What is wrong with the installed connect-es, as seen by exercising the two
 * patched behaviours directly; empty when the patch is in force.
 */
export function connectPatchProblems(): string[] {
  const problems: string[] = [];
  try {
    const lookup = createMethodSerializationLookup(healthV1.Health.method.check, undefined, undefined, { readMaxBytes: 1024, writeMaxBytes: 1024 });
    lookup.getI(true).parse(new Uint8Array([0xff, 0xff, 0xff, 0x0f, 0x01]));
    problems.push("a request body that is not protobuf parsed without an error");
  } catch (e) {
    const code = ConnectError.from(e).code;
    if (code !== Code.InvalidArgument) problems.push(`a request body that is not protobuf is answered ${Code[code]}, not InvalidArgument`);
  }
  try {
    const trailer = new Headers();
    setTrailerStatus(trailer, new ConnectError("a; b, /c \ud800", Code.InvalidArgument));
    const message = trailer.get("grpc-message");
    if (message !== "a; b, /c %EF%BF%BD") problems.push(`grpc-message is not encoded per the gRPC spec: ${JSON.stringify(message)}`);
  } catch (e) {
    problems.push(`an error message with a lone surrogate cannot be written as grpc-message (${String(e)})`);
  }
  return problems;
}

/**
 * Says loudly when connect-es runs without our patch (`reportUnpatched`). In
 * production the service refuses to start: without the patch one request
 * whose error message quotes a lone surrogate is never answered and holds an
 * admission slot until its deadline, so a few dozen such requests stall a
 * gateway, and bad protobuf is answered INTERNAL, which pages someone.
 */
export function checkConnectPatch(logger: Logger, env: Record<string, string | undefined> = process.env, problems: string[] = connectPatchProblems()): void {
  reportUnpatched("@connectrpc/connect", problems, logger, env);
}
