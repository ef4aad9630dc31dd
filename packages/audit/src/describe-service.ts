import type { PluginEffects, WiredDependencyClient } from "@platform/runtime";
import type { DependencyDescription, RetryDescription, ServiceDescription, ServicePlugin } from "./model.js";

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function num(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw new Error(`configuration has no number at ${what}`);
  return v;
}

/** The server settings every service has (readServerConfig's shape). */
function findServer(config: Json): Json {
  const server = Object.values(config).find((v) => isObject(v) && isObject(v["deadline"]) && isObject(v["admission"]));
  if (!isObject(server)) throw new Error("configuration has no server settings (readServerConfig)");
  return server;
}

/** Every dependency in the configuration, wherever it sits (readDependencyConfig's shape). */
function findDependencies(value: unknown, out: Json[] = []): Json[] {
  if (Array.isArray(value)) for (const v of value) findDependencies(v, out);
  else if (isObject(value)) {
    if (typeof value["name"] === "string" && typeof value["baseUrl"] === "string" && isObject(value["isolation"])) out.push(value);
    else for (const v of Object.values(value)) findDependencies(v, out);
  }
  return out;
}

function retryFrom(raw: unknown, from: RetryDescription["from"]): RetryDescription {
  if (!isObject(raw) || !isObject(raw["policy"])) return { maxAttempts: 1, platformLoop: true, from };
  const policy = raw["policy"];
  const backoff = isObject(policy["backoff"]) ? policy["backoff"] : {};
  const budget = isObject(raw["budget"]) ? raw["budget"] : {};
  return {
    maxAttempts: num(policy["maxAttempts"], "retry.policy.maxAttempts"),
    platformLoop: true,
    backoff: {
      initialMs: num(backoff["initialMs"], "backoff.initialMs"),
      multiplier: num(backoff["multiplier"], "backoff.multiplier"),
      maxMs: num(backoff["maxMs"], "backoff.maxMs"),
    },
    budget: {
      percentCanRetry: num(budget["percentCanRetry"], "budget.percentCanRetry"),
      minRetriesPerSec: num(budget["minRetriesPerSec"], "budget.minRetriesPerSec"),
      ttlMs: num(budget["ttlMs"], "budget.ttlMs"),
    },
    from,
  };
}

/**
 * Reads one service's configuration (its loader's output, redacted, or the
 * same from GET /admin/config) into what the audit checks. It recognises
 * the shared readers' shapes (readServerConfig, readDependencyConfig,
 * readIntakeConfig, a `retry` policy, `databaseUrl`/`dbPoolMax`), so a new
 * service is understood without a line here.
 *
 * Retries: a live service reports the policy each dependency client was
 * actually created with (`wired`). From configuration alone, a service
 * whose configuration holds a retry policy is taken to retry every
 * dependency with it (the gateway's main does), and one without to attempt
 * each call once (every inner main passes retry: "none"; --live and the
 * e2e retry test check that wiring).
 *
 * Plug-ins (PLATFORM_PLUGINS) change the composition the configuration
 * describes; each says how (PluginEffects), and that wins.
 */
export function describeService(name: string, configJson: unknown, wired?: WiredDependencyClient[], plugins: ServicePlugin[] = []): ServiceDescription {
  if (!isObject(configJson)) throw new Error(`${name}: configuration is not an object`);
  const server = findServer(configJson);
  const deadline = server["deadline"] as Json;
  const admission = server["admission"] as Json;
  const effects: PluginEffects = Object.assign({}, ...plugins.map((p) => p.effects));
  const configRetry = configJson["retry"];

  const dependencies: DependencyDescription[] = findDependencies(configJson).map((d) => {
    const depName = d["name"] as string;
    const isolation = d["isolation"] as Json;
    const breaker = isolation["breaker"] as Json;
    const wiredClient = wired?.find((w) => w.dependency === depName);
    const retry: RetryDescription =
      effects.callAttempts !== undefined
        ? { maxAttempts: effects.callAttempts, platformLoop: false, from: wiredClient ? "wired" : "configuration" }
        : wiredClient
          ? retryFrom(wiredClient.retry, "wired")
          : retryFrom(configRetry, "configuration");
    const fixed = effects.fixedCallTimeoutMs !== undefined ? { fixedTimeoutMs: effects.fixedCallTimeoutMs } : {};
    if (effects.noIsolation) return { name: depName, baseUrl: d["baseUrl"] as string, retry, ...fixed };
    return {
      name: depName,
      baseUrl: d["baseUrl"] as string,
      ...fixed,
      bulkhead: {
        limit: String(isolation["limit"]),
        minConcurrent: num(isolation["minConcurrent"], `${depName}.minConcurrent`),
        maxConcurrent: num(isolation["maxConcurrent"], `${depName}.maxConcurrent`),
        maxQueue: num(isolation["maxQueue"], `${depName}.maxQueue`),
      },
      breaker: {
        volumeThreshold: num(breaker["volumeThreshold"], "breaker.volumeThreshold"),
        errorThresholdPercentage: num(breaker["errorThresholdPercentage"], "breaker.errorThresholdPercentage"),
        windowMs: num(breaker["windowMs"], "breaker.windowMs"),
        resetTimeoutMs: num(breaker["resetTimeoutMs"], "breaker.resetTimeoutMs"),
        ...(breaker["firstResetMs"] !== undefined ? { firstResetMs: num(breaker["firstResetMs"], "breaker.firstResetMs") } : {}),
      },
      retry,
    };
  });

  const intake = configJson["intake"];
  return {
    name,
    edge: deadline["edge"] === true,
    plugins: plugins.map((p) => p.name),
    databaseAttempts: effects.databaseAttempts ?? 1,
    port: num(server["port"], "server.port"),
    deadline: {
      defaultMs: num(deadline["defaultMs"], "deadline.defaultMs"),
      maxMs: num(deadline["maxMs"], "deadline.maxMs"),
      hopReserveMs: num(deadline["hopReserveMs"], "deadline.hopReserveMs"),
      minBudgetMs: num(deadline["minBudgetMs"], "deadline.minBudgetMs"),
    },
    // A plug-in may take admission control out (serve()'s composition): the queue is then unbounded.
    ...(!effects.noAdmission
      ? {
          admission: {
            maxConcurrent: num(admission["maxConcurrent"], "admission.maxConcurrent"),
            maxQueue: num(admission["maxQueue"], "admission.maxQueue"),
            maxQueueWaitMs: num(admission["maxQueueWaitMs"], "admission.maxQueueWaitMs"),
          },
        }
      : {}),
    ...(isObject(server["streams"])
      ? {
          streams: {
            maxLifetimeMs: num(server["streams"]["maxLifetimeMs"], "streams.maxLifetimeMs"),
            maxConcurrent: num(server["streams"]["maxConcurrent"], "streams.maxConcurrent"),
            maxPerCaller: num(server["streams"]["maxPerCaller"], "streams.maxPerCaller"),
            heartbeatMs: num(server["streams"]["heartbeatMs"], "streams.heartbeatMs"),
          },
        }
      : {}),
    dependencies,
    ...("databaseUrl" in configJson ? { database: { poolMax: typeof configJson["dbPoolMax"] === "number" ? configJson["dbPoolMax"] : undefined } } : {}),
    ...(isObject(intake) && typeof intake["enabled"] === "boolean"
      ? {
          intake: {
            // A plug-in may take the intake controller out (serve()'s composition).
            enabled: intake["enabled"] && !effects.noIntake,
            minSuccessRate: num(intake["minSuccessRate"], "intake.minSuccessRate"),
            cutFraction: num(intake["cutFraction"], "intake.cutFraction"),
            stepFraction: num(intake["stepFraction"], "intake.stepFraction"),
            stepIntervalMs: num(intake["stepIntervalMs"], "intake.stepIntervalMs"),
          },
        }
      : {}),
  };
}
