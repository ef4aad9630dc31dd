/**
 * `@platform/runtime/testing`: hooks for the specs and the storm lab, kept
 * out of the public index. A service needs none of them.
 *
 * - `serveWithHooks`: serve() with parts replaced (the timeout-header
 *   parser, which a spec counts).
 * - `scopeFor`, `countInboundDeadline`: the deadline interceptor's request
 *   scope and its inbound deadline metrics, for a stack that composes its
 *   own deadline handling (the lab's naive baseline, lab/naive/naive-server.ts).
 *
 * The files under testing/ are the runtime's own spec helpers: they are
 * neither exported nor built.
 */
export { serveWithHooks, type ServeHooks } from "./server/serve.js";
export { scopeFor, countInboundDeadline } from "./deadline/deadline-interceptor.js";
