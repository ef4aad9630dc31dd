/**
 * What the audit works on: the services of one configuration (a "target":
 * the code defaults, the compose file, a Kubernetes overlay, or running
 * processes), each described from the configuration it would run with. A
 * source (sources/*.ts) produces the environment; the service's own config
 * loader turns it into its configuration; `describeService` reads that.
 * A per-service manifest can later become one more source.
 */
import type { PluginEffects, WiredDependencyClient } from "@platform/runtime";

/** A plug-in a service runs with (PLATFORM_PLUGINS), and what it changes there. */
export interface ServicePlugin {
  name: string;
  effects: PluginEffects;
}

/** One variable of a service's environment and where it was set, e.g. "docker-compose.yml: services.orders.environment". */
export interface SetVariable {
  value: string;
  source: string;
}

export interface TargetService {
  name: string;
  /** The service's configuration as its loader produced it, redacted (the shape of GET /admin/config's `config`). */
  config: unknown;
  /** Live only: the dependency clients the process actually created. */
  wired?: WiredDependencyClient[];
  /** The plug-ins it runs with: loaded from PLATFORM_PLUGINS, or (live) as the process reports them. */
  plugins?: ServicePlugin[];
  /** The variables set for it (empty for live services, whose values are in `config`). */
  env: Record<string, SetVariable>;
  /** Where an unset variable's default comes from, e.g. "services/orders/src/config.ts". */
  defaultsFile: string;
  /** Live only: the operator port it was read from. */
  adminUrl?: string;
  /** Live only, at the edge: GET /admin/intake, the intake controller now. */
  intakeNow?: { state: string; admitFraction: number };
}

export interface Target {
  /** e.g. "defaults", "compose", "kubernetes/production", "live". */
  name: string;
  /** What was read, for the report's header. */
  origin: string;
  services: TargetService[];
  /** Services whose configuration was refused: the audit fails on them. */
  refused: { service: string; problems: string[]; where: string }[];
  /**
   * Kubernetes only: each Service's name (a host a dependency URL may name),
   * the platform service it selects, and whether it is headless (no cluster
   * IP: one address per pod, which the caller balances per call).
   */
  hosts?: Record<string, { service: string; headless: boolean }>;
}

export interface RetryDescription {
  maxAttempts: number;
  /** The platform's retry loop: only idempotent or keyed methods, full jitter, budget, pushback. False for a plug-in's own loop (PluginEffects.callAttempts). */
  platformLoop: boolean;
  backoff?: { initialMs: number; multiplier: number; maxMs: number };
  budget?: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number };
  /** "configuration" (static: the service's config declares it) or "wired" (live: the client was created with it). */
  from: "configuration" | "wired";
}

export interface DependencyDescription {
  /** The dependency's name in the caller's configuration (its variables' prefix). */
  name: string;
  baseUrl: string;
  /** Undefined when the calls go through no bulkhead (a plug-in took isolation out). */
  bulkhead?: { limit: string; minConcurrent: number; maxConcurrent: number; maxQueue: number };
  breaker?: { volumeThreshold: number; errorThresholdPercentage: number; windowMs: number; resetTimeoutMs: number; firstResetMs?: number };
  retry: RetryDescription;
  /** A plug-in's fixed per-call timeout instead of the propagated deadline. */
  fixedTimeoutMs?: number;
}

export interface ServiceDescription {
  name: string;
  edge: boolean;
  /** Names of the plug-ins that change how it is composed; empty as the platform ships. */
  plugins: string[];
  /** Transactions per call at its database: 1, unless a plug-in's database client repeats them. */
  databaseAttempts: number;
  port: number;
  deadline: { defaultMs: number; maxMs: number; hopReserveMs: number; minBudgetMs: number };
  /** Undefined when nothing bounds the server's queue (a plug-in took admission control out). */
  admission?: { maxConcurrent: number; maxQueue: number; maxQueueWaitMs: number };
  /** Server streams' own admission class and lifetime (undefined for a configuration from before streams). */
  streams?: { maxLifetimeMs: number; maxConcurrent: number; maxPerCaller: number; heartbeatMs: number };
  dependencies: DependencyDescription[];
  database?: { poolMax: number | undefined };
  intake?: { enabled: boolean; minSuccessRate: number; cutFraction: number; stepFraction: number; stepIntervalMs: number };
}

/** A broken rule, named by the variable (and where it is set) or the file to change. */
export interface Problem {
  message: string;
  where: string;
}

export interface Answer {
  question: string;
  pass: boolean;
  /** The numbers behind the answer. */
  facts: string[];
  problems: Problem[];
}
