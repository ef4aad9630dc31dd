import type { IContainer } from "kubernetes-models/v1/Container";
import { containerWhere } from "../manifests.js";
import { withContainer, type Policy } from "./policy.js";

function preStopSleepSeconds(c: IContainer): number | undefined {
  const preStop = c.lifecycle?.preStop;
  if (preStop?.sleep) return preStop.sleep.seconds;
  const cmd = preStop?.exec?.command;
  if (cmd?.length === 2 && cmd[0] === "sleep" && /^\d+$/.test(cmd[1] ?? "")) return Number(cmd[1]);
  return undefined;
}

export const shutdown: Policy = {
  name: "shutdown",
  rule: "A preStop sleep (endpoints are removed while it runs), then the drain (DRAIN_TIMEOUT_MS), then some slack, all within terminationGracePeriodSeconds.",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const cw = containerWhere(w);
      const sleep = preStopSleepSeconds(w.container);
      if (sleep === undefined || sleep < 1) out.push(`${cw}: needs a preStop sleep of a few seconds (endpoints are removed before the drain starts)`);
      const drainRaw = w.env.get("DRAIN_TIMEOUT_MS");
      let drainMs = m.facts.defaultDrainMs;
      if (drainRaw !== undefined) {
        if (!("value" in drainRaw) || !/^\d+$/.test(drainRaw.value)) out.push(`${cw}: DRAIN_TIMEOUT_MS must be a literal number of milliseconds`);
        else drainMs = Number(drainRaw.value);
      }
      const grace = w.pod.terminationGracePeriodSeconds ?? 30;
      const slack = m.facts.shutdownSlackSeconds;
      if (grace <= (sleep ?? 0) + drainMs / 1000 + slack) {
        out.push(
          `Deployment/${w.name}: terminationGracePeriodSeconds (${grace}) must exceed preStop sleep (${sleep ?? 0} s) + DRAIN_TIMEOUT_MS (${drainMs / 1000} s) + ${slack} s`,
        );
      }
    }
    return out;
  },
};
