import pg from "pg";
import type { LabPlatform } from "./platform/lab-platform.js";

export interface ScenarioTiming {
  /** Steady load before the trigger. */
  preMs: number;
  /** How long the trigger lasts. */
  triggerMs: number;
  /** Steady load after it: does goodput come back? */
  postMs: number;
}

/** What is done to the platform when the trigger starts and ends (load changes are in `load`). */
export interface Trigger {
  start(p: LabPlatform): Promise<void>;
  stop(p: LabPlatform): Promise<void>;
}

export interface Scenario {
  name: string;
  title: string;
  /** One line for the docs and the report: what happens. */
  summary: string;
  timing: { full: ScenarioTiming; quick: ScenarioTiming };
  /** Offered rate as a fraction of the measured capacity: before and after the trigger, and during it. */
  load: { base: number; during: number };
  trigger?: Trigger;
}

const noop = async () => {};

/** Both databases behind pricing and orders: they share the one PostgreSQL. */
const databaseServices = ["pricing", "orders"] as const;

export const scenarios: readonly Scenario[] = [
  {
    name: "failover",
    title: "1. Failover: the database is down for about 2 s",
    summary:
      "PostgreSQL (pricing's and orders' database) is stopped with a fast shutdown under steady load (half capacity) and started again 2 s later on the same data and port.",
    timing: { full: { preMs: 6000, triggerMs: 2000, postMs: 10_000 }, quick: { preMs: 3000, triggerMs: 2000, postMs: 5000 } },
    load: { base: 0.5, during: 0.5 },
    trigger: { start: (p) => p.stopDatabase(), stop: (p) => p.startDatabase() },
  },
  {
    name: "slow-query",
    title: "2. Slow query: pricing's database goes from milliseconds to 2 s",
    summary:
      "Every pricing transaction first runs pg_sleep(2) on the server (db.latencyMs 2000 on pricing) under steady load (half capacity); the client gives up after 2 s.",
    timing: { full: { preMs: 6000, triggerMs: 8000, postMs: 10_000 }, quick: { preMs: 3000, triggerMs: 4000, postMs: 5000 } },
    load: { base: 0.5, during: 0.5 },
    trigger: {
      start: (p) => p.setFaults("pricing", { db: { latencyMs: 2000 } }),
      stop: (p) => p.setFaults("pricing", {}),
    },
  },
  {
    name: "overload",
    title: "3. Overload: 1.75x capacity",
    summary: "Offered load jumps from half the measured capacity to 1.75x for the trigger window, then back.",
    timing: { full: { preMs: 6000, triggerMs: 10_000, postMs: 8000 }, quick: { preMs: 3000, triggerMs: 5000, postMs: 5000 } },
    load: { base: 0.5, during: 1.75 },
    trigger: { start: noop, stop: noop },
  },
  {
    name: "metastable",
    title: "4. Metastable: a short spike over capacity, then normal load",
    summary:
      "Normal load (half capacity), a 2.5x-capacity spike for a few seconds, then normal load again: goodput must come back by itself once the spike is gone.",
    // The post window is long on purpose: after a collapse the platform's intake controller cuts admission
    // (to the share still being served, at least 20%) and readmits 10% every 2 s, so after a deep cut
    // 80% of normal goodput takes up to ~12 s by design.
    timing: { full: { preMs: 6000, triggerMs: 3000, postMs: 22_000 }, quick: { preMs: 3000, triggerMs: 2000, postMs: 18_000 } },
    load: { base: 0.5, during: 2.5 },
    trigger: { start: noop, stop: noop },
  },
  {
    name: "full-outage",
    title: "5. Full outage: every pricing statement fails",
    summary: "Every pricing transaction fails on the server (db.errorRate 1 on pricing) under steady load (half capacity), then the fault is cleared.",
    timing: { full: { preMs: 6000, triggerMs: 6000, postMs: 8000 }, quick: { preMs: 3000, triggerMs: 4000, postMs: 2000 } },
    load: { base: 0.5, during: 0.5 },
    trigger: {
      start: (p) => p.setFaults("pricing", { db: { errorRate: 1 } }),
      stop: (p) => p.setFaults("pricing", {}),
    },
  },
  {
    name: "slow-dependency",
    title: "6. Slow dependency: pricing's table locked, shipped defaults",
    summary:
      "A superuser connection holds LOCK TABLE pricing.products IN ACCESS EXCLUSIVE MODE under steady load (half capacity): every pricing statement waits. GetOrder never needs pricing; its goodput is the isolation at work (docs/isolation.md).",
    timing: { full: { preMs: 6000, triggerMs: 8000, postMs: 10_000 }, quick: { preMs: 3000, triggerMs: 4000, postMs: 5000 } },
    load: { base: 0.5, during: 0.5 },
    trigger: lockTable("pricing.products"),
  },
];

/** A real slowdown: a transaction holding an ACCESS EXCLUSIVE lock on `table`, released at stop. */
function lockTable(table: string): Trigger {
  let holder: pg.Client | undefined;
  return {
    async start(p) {
      holder = new pg.Client({ connectionString: p.databaseUrl });
      await holder.connect();
      await holder.query("BEGIN");
      await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    },
    async stop() {
      const h = holder;
      holder = undefined;
      if (h === undefined) return;
      await h.query("ROLLBACK").catch(() => {});
      await h.end();
    },
  };
}

/** Failover by fault injection instead of a real stop: both database clients refuse to connect. */
export const failoverByFault: Trigger = {
  start: async (p) => {
    await Promise.all(databaseServices.map((s) => p.setFaults(s, { db: { unreachable: true } })));
  },
  stop: async (p) => {
    await Promise.all(databaseServices.map((s) => p.setFaults(s, {})));
  },
};

export function scenarioNamed(name: string): Scenario {
  const s = scenarios.find((x) => x.name === name);
  if (!s) throw new Error(`unknown scenario "${name}" (expected one of ${scenarios.map((x) => x.name).join(", ")})`);
  return s;
}
