import { ConfigError } from "../config/config.js";
import { loadPlugins } from "../config/plugin.js";
import type { RunningServer } from "./serve.js";

/** Exit status for a configuration error (sysexits EX_CONFIG): a supervisor must not restart on it. */
export const exitConfigError = 78;

/** Message a supervised service sends its supervisor once it serves. */
export interface ReadyMessage {
  type: "ready";
  service: string;
  port: number;
  adminPort: number;
}

/**
 * The process lifecycle around `serve()`: fail fast on bad configuration,
 * drain on SIGTERM/SIGINT (a second signal exits at once), stop when the
 * supervisor that started us disappears (no orphans), and never keep
 * running after an unexpected exception. Loads the plug-ins named in
 * PLATFORM_PLUGINS first (plugin.ts).
 */
export function runMain(service: string, start: () => Promise<RunningServer>): void {
  let server: RunningServer | undefined;
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) {
      process.stderr.write(`[${service}] ${reason} again: exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    if (!server) process.exit(0);
    server.shutdown(reason).then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`[${service}] error during shutdown: ${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // Started with an IPC channel by our supervisor: when it goes away
  // (even killed with SIGKILL), the channel closes and we stop too.
  if (process.send) process.on("disconnect", () => stop("supervisor gone"));
  process.on("uncaughtException", (e) => {
    (server?.logger ?? console).error({ err: e }, "uncaught exception: exiting");
    process.exit(1);
  });

  // Plug-ins named in PLATFORM_PLUGINS (plugin.ts) are in place before the service composes itself.
  loadPlugins()
    .then(start)
    .then(
      (s) => {
        server = s;
        if (stopping) {
          stop("signal during start-up");
          return;
        }
        // Listening now (health answers NOT_SERVING); "ready" keeps meaning
        // "serves", so it waits for the service's start-up work (serve()'s
        // `startup`, e.g. migrations waiting for the database).
        s.ready.then(
          () => {
            if (!stopping) process.send?.({ type: "ready", service, port: s.port, adminPort: s.adminPort } satisfies ReadyMessage);
          },
          (e: unknown) => {
            if (stopping) return;
            stopping = true;
            process.stderr.write(`[${service}] failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
            s.shutdown("start-up failed").finally(() => process.exit(1));
          },
        );
      },
      (e: unknown) => {
        if (e instanceof ConfigError) {
          process.stderr.write(`[${service}] ${e.message}\n`);
          process.exit(exitConfigError);
        }
        process.stderr.write(`[${service}] failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
        process.exit(1);
      },
    );
}
