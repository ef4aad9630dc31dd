import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "@platform/embedded-postgres";
import { startPlatform, type Platform } from "@platform/launcher";
import { pinProcessTrees } from "@platform/test-support";
import { compiledNaivePlugin } from "../naive/compiled-plugin.js";
import { chainManifests, chainServices as serviceNames, type ChainService as ServiceName } from "../chain.js";

export type Profile = "naive" | "platform";

/** The naive baseline, as a plug-in module every service loads (runtime plugin.ts). */
export const naivePlugin = fileURLToPath(new URL("../naive/plugin.ts", import.meta.url));
export const profiles: readonly Profile[] = ["naive", "platform"];

/** A fresh platform for one run, with the handles a scenario's trigger needs. */
export interface LabPlatform {
  profile: Profile;
  /** Service exits seen since start (a crash under a storm is a finding; counters restart from zero). */
  readonly exits: readonly string[];
  gatewayUrl: string;
  databaseUrl: string;
  services: Platform["services"];
  /** Each service's log file (JSON lines), until close(). */
  logFiles: Record<ServiceName, string>;
  /** PUT /admin/faults on one service (`{}` clears). */
  setFaults(service: ServiceName, faults: object): Promise<void>;
  clearAllFaults(): Promise<void>;
  /** Stops the real PostgreSQL (fast shutdown: sessions are terminated). */
  stopDatabase(): Promise<void>;
  /** Starts it again on the same data directory and port. */
  startDatabase(): Promise<void>;
  /**
   * Stops everything; `onStopped` runs once the services have exited (their
   * logs complete), before the data is removed. `drain: false` kills the
   * services instead of letting them finish what they hold (default: drain).
   */
  close(onStopped?: () => void | Promise<void>, opts?: { drain?: boolean }): Promise<void>;
}

/**
 * Starts embedded PostgreSQL and the four services for one profile, in a
 * new temp directory (0755: the database runs as an unprivileged user when
 * we are root). The two profiles get exactly the same platform but for the
 * naive plug-in (lab/naive/plugin.ts), loaded into every service through
 * PLATFORM_PLUGINS.
 */
export async function startLabPlatform(
  profile: Profile,
  opts: {
    keepData?: boolean;
    onProgress?: (line: string) => void;
    /** LOG_LEVEL of the services: "warn" by default (the storm lab reads metrics, not logs); "shipped" leaves the services' default. */
    logLevel?: string;
    /** Extra environment for every service (a variant's switches). */
    env?: Record<string, string>;
    /**
     * Enable fault injection (FAULT_INJECTION=enabled with a fresh token) so
     * that `setFaults` works: the storm lab's triggers need it. Default true;
     * the bench passes false to measure exactly what ships.
     */
    faultInjection?: boolean;
    /** Services from their compiled dist/ ("build", `npm run build` first) or their sources through tsx (default: the launcher's). */
    from?: "build" | "source";
    /**
     * Pin the database and the services (every thread, every child) to
     * these cores (taskset's list, "0" or "2-3"), once they are up, and the
     * database again after startDatabase(). A service the launcher restarts
     * after a crash runs unpinned (the crash is in `exits`).
     */
    cpus?: string;
  } = {},
): Promise<LabPlatform> {
  const dataDir = mkdtempSync(join(tmpdir(), `storm-${profile}-`));
  chmodSync(dataDir, 0o755);
  const exits: string[] = [];
  const faultToken = randomBytes(24).toString("hex");
  let platform: Platform;
  try {
    platform = await startPlatform({
      dataDir,
      manifests: chainManifests(),
      freePorts: true,
      ...(opts.from ? { from: opts.from } : {}),
      env: {
        // A service from its build is plain node: it loads the plug-in compiled (lab/naive/compiled-plugin.ts).
        ...(profile === "naive" ? { PLATFORM_PLUGINS: opts.from === "build" ? compiledNaivePlugin() : naivePlugin } : {}),
        // The lab's triggers inject faults: enabled here, explicitly, with a fresh token (off everywhere else).
        ...(opts.faultInjection === false ? {} : { FAULT_INJECTION: "enabled", FAULT_INJECTION_TOKEN: faultToken }),
        ...(opts.logLevel === "shipped" ? {} : { LOG_LEVEL: opts.logLevel ?? "warn" }),
        ...opts.env,
      },
      onProgress: (line) => {
        if (/ exited /.test(line)) exits.push(line);
        opts.onProgress?.(line);
      },
    });
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  // The database we started after a stopDatabase(), if any; platform.stop() knows only the first.
  let restarted: EmbeddedPostgres | undefined;
  const current = () => restarted ?? platform.postgres;
  const pin = (pids: (number | undefined)[]) => {
    if (opts.cpus !== undefined)
      pinProcessTrees(
        pids.filter((pid) => pid !== undefined),
        opts.cpus,
      );
  };
  try {
    pin([platform.postgres?.pid, ...serviceNames.map((n) => platform.services[n].process.pid)]);
  } catch (e) {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }

  const setFaults = async (service: ServiceName, faults: object) => {
    if (opts.faultInjection === false) throw new Error("setFaults: this lab platform was started with faultInjection: false");
    const res = await fetch(`${platform.services[service].adminUrl}/admin/faults`, {
      method: "PUT",
      headers: { authorization: `Bearer ${faultToken}` },
      body: JSON.stringify(faults),
      // Long: on a starved machine (load 30+ on 2 cores) an admin PUT took over 5 s, and a fault
      // that could not be set fails the whole run; the times a trigger actually took are recorded.
      signal: AbortSignal.timeout(30_000),
    });
    if (!res.ok) throw new Error(`setting faults on ${service}: ${res.status} ${await res.text()}`);
  };

  return {
    profile,
    exits,
    gatewayUrl: platform.gatewayUrl,
    databaseUrl: platform.databaseUrl,
    services: platform.services,
    logFiles: Object.fromEntries(serviceNames.map((n) => [n, platform.services[n].logFile])) as Record<ServiceName, string>,
    setFaults,
    async clearAllFaults() {
      await Promise.all(serviceNames.map((s) => setFaults(s, {})));
    },
    async stopDatabase() {
      const pgNow = current();
      if (!pgNow) throw new Error("stopDatabase: the platform does not run an embedded database");
      await pgNow.stop("fast");
    },
    async startDatabase() {
      const first = platform.postgres;
      if (!first) throw new Error("startDatabase: the platform does not run an embedded database");
      restarted = await startEmbeddedPostgres({ dataDir: first.dataDir, port: first.port, host: "127.0.0.1" });
      pin([restarted.pid]);
    },
    async close(onStopped, closeOpts) {
      try {
        // A run's evidence is taken before it closes; a stack left with a backlog (the naive one
        // after a spike holds thousands of abandoned requests) drains it for up to 15 s per service,
        // one after the other, when nothing would read the result: killed at once instead.
        if (closeOpts?.drain === false) await Promise.all(serviceNames.map((n) => platform.services[n].process.stop(0)));
        await platform.stop();
        await restarted?.stop("fast");
        await onStopped?.();
      } finally {
        // STORM_KEEP_DATA=1 keeps every run's logs and database for a look afterwards (docs/storm-lab.md).
        if (!opts.keepData && !process.env["STORM_KEEP_DATA"]) rmSync(dataDir, { recursive: true, force: true });
        else console.error(`storm lab: kept the ${profile} run's data in ${dataDir} (services' logs in logs/)`);
      }
    },
  };
}
