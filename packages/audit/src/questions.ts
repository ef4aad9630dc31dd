import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { formatAttempts, possessive, type MethodAttempts } from "./attempts.js";
import type { CallGraph, Hop } from "./call-graph.js";
import { locate, variablePrefix } from "./locate.js";
import type { Answer, Problem, ServiceDescription } from "./model.js";
import { repoRoot, servedApis } from "./service-modules.js";

/** No request through this platform completes in under 1 ms: a queue its slots cannot drain in its tolerable wait at that pace is no bound. */
export const fastestServiceMs = 1;
/** A retry budget above this share no longer keeps a total failure near 1.1x the load (docs/audit.md). */
export const maxRetryBudgetShare = 0.2;

/** Where a plug-in that changes a service's composition is named. */
const pluginVar = "PLATFORM_PLUGINS";

/** "plug-in a, b", for messages about what a plug-in took out. */
function byPlugins(s: ServiceDescription): string {
  return s.plugins.length > 0 ? `plug-in ${s.plugins.join(", ")}` : "its composition";
}

function hopName(h: Hop): string {
  return `${h.caller.name} -> ${h.callee?.name ?? h.dependency.name}`;
}

function retryWhere(graph: CallGraph, h: Hop): string {
  if (!h.dependency.retry.platformLoop) return locate(graph, h.caller.name, pluginVar);
  const file = graph.sources.get(h.caller.name)?.defaultsFile ?? "";
  return h.dependency.retry.from === "wired"
    ? `services/${h.caller.name}/src/main.ts: createDependencyClient for ${h.dependency.name} is given a retry policy (live)`
    : `${file}: its configuration declares a retry policy`;
}

/** 1. Are timeouts longer toward the outside, and are they based on measurements such as p99.9? */
export function timeoutsShrinkInward(graph: CallGraph): Answer {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const s of graph.services) {
    const d = s.deadline;
    facts.push(
      `${s.name}: default ${d.defaultMs} ms, maximum ${d.maxMs} ms${s.edge ? " (the edge)" : " (applies only to a request that arrives without one)"}, ${d.hopReserveMs} ms kept back per downstream call`,
    );
  }
  for (const h of graph.hops) {
    const callee = h.callee;
    if (callee === undefined) continue;
    for (const [key, variable] of [
      ["defaultMs", "DEADLINE_DEFAULT_MS"],
      ["maxMs", "DEADLINE_MAX_MS"],
    ] as const) {
      if (callee.deadline[key] > h.caller.deadline[key]) {
        problems.push({
          message: `${possessive(callee.name)} ${key === "defaultMs" ? "default" : "maximum"} deadline (${callee.deadline[key]} ms) is longer than its caller ${possessive(h.caller.name)} (${h.caller.deadline[key]} ms): timeouts grow inward, so work can run on after the caller has given up`,
          where: locate(graph, callee.name, variable),
        });
      }
    }
    const inner = graph.hops.filter((below) => below.caller === callee);
    for (const below of inner) {
      const outer = h.dependency.fixedTimeoutMs;
      const own = below.dependency.fixedTimeoutMs;
      if (outer !== undefined && own !== undefined && own >= outer) {
        problems.push({
          message: `${hopName(below)} waits ${own} ms per call, ${hopName(h)} only ${outer} ms: fixed timeouts grow inward`,
          where: locate(graph, callee.name, pluginVar),
        });
      }
    }
  }
  for (const edge of graph.edges) {
    const chain = longestChain(graph, edge);
    let left = edge.deadline.defaultMs;
    const steps = [`${edge.name} ${left} ms`];
    for (const h of chain) {
      left -= h.caller.deadline.hopReserveMs;
      steps.push(`${h.callee!.name} <= ${left} ms`);
    }
    if (chain.at(-1)?.callee?.database) steps.push(`statement_timeout <= ${left} ms`);
    facts.push(`a request without a deadline, at each hop: ${steps.join(" -> ")} (less the time already spent)`);
  }
  facts.push("measured basis: not known from configuration; `--advise` compares each deadline with the p99.9 measured under load");
  return {
    question: "1. Are timeouts longer toward the outside, and are they based on measurements such as p99.9?",
    pass: problems.length === 0,
    facts,
    problems,
  };
}

function longestChain(graph: CallGraph, from: ServiceDescription, seen: string[] = []): Hop[] {
  let best: Hop[] = [];
  for (const h of graph.hops.filter((x) => x.caller === from && x.callee !== undefined && !seen.includes(x.callee.name))) {
    const rest = [h, ...longestChain(graph, h.callee!, [...seen, from.name])];
    if (rest.length > best.length) best = rest;
  }
  return best;
}

/** 2. Does the deadline travel downstream? */
export function deadlineTravels(graph: CallGraph): Answer {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const s of graph.services) {
    const fixed = s.dependencies.find((d) => d.fixedTimeoutMs !== undefined)?.fixedTimeoutMs;
    if (fixed !== undefined || s.databaseAttempts > 1) {
      problems.push({
        message: `${s.name} runs ${byPlugins(s)}: its calls get a fixed timeout (${fixed ?? "none"} ms) instead of the caller's remaining deadline${s.database ? ", and its database statements none" : ""}`,
        where: locate(graph, s.name, pluginVar),
      });
      continue;
    }
    const parts = [];
    if (s.dependencies.length > 0)
      parts.push(
        `sends the remaining deadline less ${s.deadline.hopReserveMs} ms to ${s.dependencies.map((d) => d.name).join(", ")} and starts no call with under ${s.deadline.minBudgetMs} ms left`,
      );
    if (s.database)
      parts.push("runs each transaction under SET LOCAL statement_timeout from the remaining deadline and cancels the statement when the caller goes away");
    if (parts.length > 0) facts.push(`${s.name}: ${parts.join("; ")}`);
  }
  return { question: "2. Does the deadline travel downstream?", pass: problems.length === 0, facts, problems };
}

/** 3. Does exactly one layer retry, and what is the maximum number of attempts at the bottom, multiplied out? */
export function oneLayerRetries(graph: CallGraph, attempts: MethodAttempts[]): Answer {
  const problems: Problem[] = [];
  const retrying = graph.hops.filter((h) => h.dependency.retry.maxAttempts > 1);
  for (const h of retrying) {
    if (!h.caller.edge) {
      problems.push({
        message: `inner hop ${hopName(h)} retries (${h.dependency.retry.maxAttempts} attempts per call): only the edge may retry, or attempts multiply`,
        where: retryWhere(graph, h),
      });
    }
  }
  for (const edge of graph.edges) {
    if (!retrying.some((h) => h.caller === edge)) {
      problems.push({
        message: `no layer retries: ${edge.name} attempts each call once, so every transient failure reaches the user`,
        where: locate(graph, edge.name, "RETRY_MAX_ATTEMPTS"),
      });
    }
  }
  const layers = [...new Set(retrying.map((h) => h.caller.name))];
  const wired = graph.hops.length > 0 && graph.hops.every((h) => h.dependency.retry.from === "wired");
  const facts = [
    `retrying layers: ${layers.length === 0 ? "none" : layers.join(", ")}; every other hop attempts each call once (${wired ? "as each process wired its dependency clients" : "from configuration: a service retries when its configuration holds a retry policy"})`,
    ...attempts.map(formatAttempts),
  ];
  return {
    question: "3. Does exactly one layer retry, and what is the maximum number of attempts at the bottom, multiplied out?",
    pass: problems.length === 0,
    facts,
    problems,
  };
}

/** 4. Is there backoff with jitter, and a cap on the total? (And are the retry budget and pushback on?) */
export function backoffAndCap(graph: CallGraph): Answer {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const h of graph.hops.filter((x) => x.dependency.retry.maxAttempts > 1)) {
    const r = h.dependency.retry;
    if (!r.platformLoop) {
      problems.push({
        message: `${hopName(h)} retries with ${byPlugins(h.caller)}'s own loop, not the platform's: no retry budget, pushback ignored, no check of the deadline or of idempotency`,
        where: locate(graph, h.caller.name, pluginVar),
      });
      continue;
    }
    const b = r.backoff!;
    const budget = r.budget!;
    facts.push(
      `${hopName(h)}: at most ${r.maxAttempts} attempts; full-jitter backoff from ${b.initialMs} ms x${b.multiplier} up to ${b.maxMs} ms; retry budget ${Math.round(budget.percentCanRetry * 100)} % of requests + ${budget.minRetriesPerSec}/s (over ${budget.ttlMs / 1000} s); honours the server's pushback; never sleeps past the deadline`,
    );
    if (budget.percentCanRetry > maxRetryBudgetShare) {
      problems.push({
        message: `${hopName(h)}: the retry budget lets ${Math.round(budget.percentCanRetry * 100)} % of requests be retried; under total failure ${h.callee?.name ?? h.dependency.name} sees ${1 + budget.percentCanRetry}x the load (keep it at most ${maxRetryBudgetShare * 100} %)`,
        where: locate(graph, h.caller.name, "RETRY_BUDGET_PERCENT"),
      });
    }
  }
  if (facts.length === 0 && problems.length === 0) facts.push("no layer retries");
  return { question: "4. Is there backoff with jitter, and a cap on the total?", pass: problems.length === 0, facts, problems };
}

/** 5. Is every queue bounded, with expired work dropped first? */
export function queuesBounded(graph: CallGraph): Answer {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const s of graph.services) {
    const a = s.admission;
    if (a === undefined) {
      problems.push({
        message: `${s.name} has no admission control (${byPlugins(s)}): its server queues without bound and works on requests whose callers have gone`,
        where: locate(graph, s.name, pluginVar),
      });
      continue;
    }
    if (s.streams) {
      const st = s.streams;
      facts.push(
        `${s.name} streams: their own class, at most ${st.maxConcurrent} open (${st.maxPerCaller} per caller), never queued (refused with pushback), each at most ${st.maxLifetimeMs / 1000} s (the default and cap of a stream's deadline)${s.edge && st.heartbeatMs > 0 ? `, a heartbeat after ${st.heartbeatMs / 1000} s idle` : ""}`,
      );
    }
    const drainable = Math.floor((a.maxConcurrent * a.maxQueueWaitMs) / fastestServiceMs);
    facts.push(
      `${s.name} admission: ${a.maxConcurrent} running + ${a.maxQueue} queued, at most ${a.maxQueueWaitMs} ms in the queue; expired requests are dropped before any work`,
    );
    if (a.maxQueue > drainable) {
      problems.push({
        message: `${possessive(s.name)} admission queue (${a.maxQueue}) is effectively unbounded: ${a.maxConcurrent} slots cannot drain it within ${a.maxQueueWaitMs} ms even at ${fastestServiceMs} ms per request (at most ${drainable}); queue limit = tolerable wait x throughput`,
        where: locate(graph, s.name, "ADMISSION_MAX_QUEUE"),
      });
    }
  }
  for (const h of graph.hops) {
    const b = h.dependency.bulkhead;
    if (b === undefined) continue; // no bulkhead: reported under isolation
    facts.push(
      `${hopName(h)} bulkhead per method: ${b.minConcurrent}..${b.maxConcurrent} slots (${b.limit}) + ${b.maxQueue} queued; a call whose expected wait cannot fit its deadline is refused before it queues`,
    );
    const a = h.callee?.admission;
    if (a !== undefined && b.maxConcurrent + b.maxQueue > a.maxConcurrent + a.maxQueue) {
      problems.push({
        message: `${hopName(h)}: ${b.maxConcurrent} slots + ${b.maxQueue} queued per method is more than ${h.callee!.name} admits at all (${a.maxConcurrent} + ${a.maxQueue}): the queue holds work that can only be shed`,
        where: locate(graph, h.caller.name, `${variablePrefix(h.dependency.name)}_MAX_QUEUE`),
      });
    }
  }
  for (const s of graph.services.filter((x) => x.database)) {
    facts.push(`${s.name} database pool: ${s.database!.poolMax ?? "?"} connections; the wait for one is bounded by the deadline`);
  }
  return { question: "5. Is every queue bounded, with expired work dropped first?", pass: problems.length === 0, facts, problems };
}

/** A test in the repository that cuts intake by hand (PUT /admin/intake with fraction 0). */
export function intakeRehearsal(testDir = join(repoRoot, "test")): string | undefined {
  if (!existsSync(testDir)) return undefined;
  for (const e of readdirSync(testDir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || !e.name.endsWith(".test.ts")) continue;
    const file = join(e.parentPath, e.name);
    const text = readFileSync(file, "utf8");
    // A cut to nothing (0, not 0.5): the rehearsal of the real thing.
    if (text.includes("/admin/intake") && /"fraction":\s*0(?![.\d])/.test(text)) return relative(repoRoot, file);
  }
  return undefined;
}

/** 6. Is cutting intake rehearsed? */
export function intakeRehearsed(graph: CallGraph, rehearsal = intakeRehearsal()): Answer {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const edge of graph.edges) {
    const i = edge.intake;
    const now = graph.sources.get(edge.name)?.intakeNow;
    if (now !== undefined) {
      facts.push(`${edge.name} now: ${now.state}, admitting ${Math.round(now.admitFraction * 100)} % of new requests`);
      if (now.state === "manual") {
        problems.push({
          message: `${edge.name}'s intake is held by hand at ${Math.round(now.admitFraction * 100)} % (left over from a rehearsal or an incident?): the controller does not react until it is returned to automatic`,
          where: `PUT ${graph.sources.get(edge.name)!.adminUrl}/admin/intake {"fraction": null}`,
        });
      }
    }
    if (i?.enabled) {
      facts.push(
        `${edge.name}: intake controller on: cuts intake to ${i.cutFraction * 100} % when under ${i.minSuccessRate * 100} % of requests succeed, readmits ${i.stepFraction * 100} % every ${i.stepIntervalMs} ms; GET/PUT /admin/intake on its operator port cuts it by hand`,
      );
    } else {
      problems.push({
        message: `${edge.name}: no intake controller guards the edge: nothing cuts intake when goodput collapses (metastable failure)`,
        where: locate(graph, edge.name, edge.plugins.length > 0 && i?.enabled === false ? pluginVar : "INTAKE_ENABLED"),
      });
    }
  }
  if (rehearsal) facts.push(`rehearsed in CI: ${rehearsal} cuts intake to 0 through PUT /admin/intake, checks the refusals, and restores it`);
  else problems.push({ message: "no test cuts intake (PUT /admin/intake with fraction 0): the cut is never rehearsed", where: "test/" });
  facts.push("whether operators rehearse the cut in production is beyond what configuration can show");
  return { question: "6. Is cutting intake rehearsed?", pass: problems.length === 0, facts, problems };
}

/** 7. Do retried writes carry idempotency keys? */
export async function retriedWritesCarryKeys(graph: CallGraph): Promise<Answer> {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const h of graph.hops.filter((x) => x.dependency.retry.maxAttempts > 1 && x.callee !== undefined)) {
    for (const api of await servedApis(h.callee!.name)) {
      for (const m of api.methods) {
        const name = `${api.typeName}/${m.name}`;
        if (m.idempotency === IdempotencyLevel.NO_SIDE_EFFECTS) {
          facts.push(`${hopName(h)} ${name}: a read (NO_SIDE_EFFECTS), safe to repeat`);
        } else if (h.dependency.retry.platformLoop) {
          facts.push(
            m.idempotency === IdempotencyLevel.IDEMPOTENT
              ? `${hopName(h)} ${name}: a write (IDEMPOTENT), retried only when the call carries an Idempotency-Key, the same on every attempt`
              : `${hopName(h)} ${name}: no idempotency level: retried only when the call provably never reached the server`,
          );
        } else if (m.idempotency === IdempotencyLevel.IDEMPOTENT && m.input.fields.some((f) => f.name === "idempotency_key")) {
          facts.push(`${hopName(h)} ${name}: a write whose key is a field of the request, the same on every attempt`);
        } else {
          problems.push({
            message: `retried write without a key: ${hopName(h)} repeats ${name} up to ${h.dependency.retry.maxAttempts} times without checking its idempotency, and nothing guarantees a key (none is a field of its request)`,
            where: locate(graph, h.caller.name, pluginVar),
          });
        }
      }
    }
  }
  if (facts.length === 0 && problems.length === 0) facts.push("no layer retries");
  return { question: "7. Do retried writes carry idempotency keys?", pass: problems.length === 0, facts, problems };
}

/**
 * Every dependency has a bulkhead and a breaker, and its URL reaches a
 * service of the platform; on Kubernetes through a headless Service, so
 * that the caller balances per call over the pods.
 */
export function isolationPerDependency(graph: CallGraph): Answer {
  const facts: string[] = [];
  const problems: Problem[] = [];
  for (const h of graph.hops) {
    const prefix = variablePrefix(h.dependency.name);
    if (h.callee === undefined) {
      problems.push({
        message: `${h.caller.name} -> ${h.dependency.name}: ${h.dependency.baseUrl} reaches no service of this configuration`,
        where: locate(graph, h.caller.name, `${prefix}_URL`),
      });
    }
    const host = hostOf(h.dependency.baseUrl);
    const service = host === undefined ? undefined : graph.hosts?.[host];
    if (service !== undefined && !service.headless) {
      problems.push({
        message: `${h.caller.name} -> ${h.dependency.name}: ${h.dependency.baseUrl} resolves to a ClusterIP Service (one virtual address): calls are balanced per connection, not per call, and a failing pod is not ejected; name a headless Service (clusterIP: None)`,
        where: locate(graph, h.caller.name, `${prefix}_URL`),
      });
    }
    const missing = [h.dependency.bulkhead ? "" : "bulkhead", h.dependency.breaker ? "" : "circuit breaker"].filter((x) => x !== "");
    if (missing.length > 0) {
      problems.push({
        message: `${hopName(h)} has no ${missing.join(" and no ")}: one slow or failing dependency can take every slot of ${h.caller.name}`,
        where: locate(graph, h.caller.name, h.caller.plugins.length > 0 ? pluginVar : `${prefix}_MAX_CONCURRENT`),
      });
    } else {
      const br = h.dependency.breaker!;
      facts.push(
        `${hopName(h)}: bulkhead and breaker per method (opens at ${br.errorThresholdPercentage} % errors over ${br.volumeThreshold}+ calls in ${br.windowMs / 1000} s; trial after ${trialWaits(br)})`,
      );
    }
  }
  return { question: "Isolation: does every dependency have a bulkhead and a breaker?", pass: problems.length === 0, facts, problems };
}

/** "0.5 s, doubling up to 5 s" or "5 s": when an open breaker tries again. */
function trialWaits(br: { resetTimeoutMs: number; firstResetMs?: number }): string {
  const first = br.firstResetMs ?? br.resetTimeoutMs;
  return first < br.resetTimeoutMs ? `${first / 1000} s, doubling up to ${br.resetTimeoutMs / 1000} s` : `${br.resetTimeoutMs / 1000} s`;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}
