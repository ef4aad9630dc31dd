/**
 * What linking each request to the server's one shutdown signal costs, as
 * a function of the requests in flight: before, Connect's handler context
 * and the call scope each added a listener to that signal per request and
 * removed it at the end (EventTarget walks its list of listeners on every
 * add and remove); now serve()'s adapter keeps the requests in flight in a
 * Set (connect-adapter.ts `liveRequests`). A ring of `inflight` requests:
 * each step ends the oldest and starts a new one, alternating the two
 * variants in rounds; CPU time per request.
 *
 *   node --import tsx lab/profile/shutdown-link-cost.ts [inflight] [requests per round] [rounds]
 */
import { median } from "../stats.js";

const inflight = Number(process.argv[2] ?? 64);
const n = Number(process.argv[3] ?? 200_000);
const rounds = Number(process.argv[4] ?? 7);

function listeners(count: number): number {
  const shutdown = new AbortController().signal;
  const ring: Array<[() => void, () => void]> = [];
  const start = (): [() => void, () => void] => {
    // Two closures per request, as Connect's link and the scope's listener are.
    const a = () => {};
    const b = () => {};
    shutdown.addEventListener("abort", a);
    shutdown.addEventListener("abort", b, { once: true });
    return [a, b];
  };
  for (let i = 0; i < inflight; i++) ring.push(start());
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const [a, b] = ring[i % inflight]!;
    shutdown.removeEventListener("abort", a);
    shutdown.removeEventListener("abort", b);
    ring[i % inflight] = start();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

function set(count: number): number {
  const live = new Set<AbortController>();
  const ring: AbortController[] = [];
  const start = () => {
    const c = new AbortController();
    live.add(c);
    return c;
  };
  for (let i = 0; i < inflight; i++) ring.push(start());
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    live.delete(ring[i % inflight]!);
    ring[i % inflight] = start();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

listeners(n);
set(n);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  a.push(listeners(n));
  b.push(set(n));
}
const f = (x: number) => Math.round(x * 1000) / 1000;
process.stderr.write(
  `${JSON.stringify({ inflight, listenersUs: f(median(a)), setUs: f(median(b)), savedUs: f(median(a.map((x, i) => x - b[i]!))), rounds: a.map((x, i) => [f(x), f(b[i]!)]) })}\n`,
);
