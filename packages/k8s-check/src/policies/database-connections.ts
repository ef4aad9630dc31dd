import { literal } from "../manifests.js";
import type { Policy } from "./policy.js";
import { hpasOf } from "./scaling.js";

export const databaseConnections: Policy = {
  name: "database-connections",
  rule: "At the largest scale, (maxReplicas + maxSurge) x DB_POOL_MAX over the services that use the database stays within the connection budget.",
  check(m) {
    let connections = 0;
    for (const w of m.workloads) {
      const facts = m.facts.services[w.name];
      if (!facts?.needsDatabase) continue;
      const pool = Number(literal(w.env, "DB_POOL_MAX") ?? facts.dbPoolMaxDefault);
      if (!Number.isFinite(pool)) return [`Deployment/${w.name}: DB_POOL_MAX is neither set as a number nor has a default`];
      const surge = w.deployment.spec?.strategy?.rollingUpdate?.maxSurge;
      // A percentage surge is counted as one pod: right at the platform's replica counts.
      connections += ((hpasOf(m, w)[0]?.spec?.maxReplicas ?? 0) + (typeof surge === "number" ? surge : 1)) * pool;
    }
    if (connections <= m.facts.databaseConnectionBudget) return [];
    return [
      `database: (maxReplicas + maxSurge) x DB_POOL_MAX adds up to ${connections} connections, over the budget of ${m.facts.databaseConnectionBudget} (docs/scaling.md)`,
    ];
  },
};
