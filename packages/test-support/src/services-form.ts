/**
 * Which form of the services a test platform starts: PLATFORM_SERVICES_FROM
 * ("build": each service's compiled dist/main.js; "source": src/main.ts
 * through tsx). `npm test` builds dist/ first and then sets "build": a
 * compiled service starts on about half the CPU of one under tsx, and a run
 * starts hundreds. Unset, undefined: the launcher's own default (the form it
 * runs in, source under tsx).
 *
 * Read here, for the test platforms only, not by the launcher: the lab's
 * platforms (lab/platform) choose their form themselves (`from`): the storm
 * lab runs the build with the naive plug-in type-stripped
 * (lab/naive/compiled-plugin.ts), the bench runs both chains compiled
 * (lab/bench/compiled-chains.ts), so neither depends on this variable.
 */
export type ServicesForm = "build" | "source";

export const servicesFormEnv = "PLATFORM_SERVICES_FROM";

export function servicesFormFromEnv(env: NodeJS.ProcessEnv = process.env): ServicesForm | undefined {
  const v = env[servicesFormEnv];
  if (v === undefined || v === "") return undefined;
  if (v !== "build" && v !== "source") throw new Error(`${servicesFormEnv} must be "build" or "source", got ${JSON.stringify(v)}`);
  return v;
}
