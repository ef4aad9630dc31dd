/**
 * A CPU profile of any service process, for docs/performance.md.
 *
 *   CPU_PROFILE_DIR=/tmp/prof NODE_OPTIONS="--import ./lab/profile/cpu-profile.mjs" npm start
 *
 * (node refuses --cpu-prof in NODE_OPTIONS, and the launcher passes the
 * environment on to every service.) Two ways to choose what is sampled:
 *
 * - by time (default): sampling starts CPU_PROFILE_DELAY_MS after the
 *   process starts (default 10000: past start-up and warm-up) and the
 *   profile is written when the process exits, as <dir>/<pid>.cpuprofile;
 * - by signal (CPU_PROFILE_ON_SIGNAL=1, what lab/profile/profile-hot-path.ts
 *   uses): each SIGUSR2 starts a window or ends the open one, which is
 *   written as <dir>/<pid>-<n>.cpuprofile (n = 1, 2, ...).
 *
 * Open the files in Chrome DevTools or speedscope, or summarize them with
 * lab/profile/summarize-profile.ts.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";

const dir = process.env.CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 250 });
  let started = false;
  if (process.env.CPU_PROFILE_ON_SIGNAL === "1") {
    let window = 0;
    process.on("SIGUSR2", () => {
      if (!started) {
        started = true;
        session.post("Profiler.start");
        return;
      }
      started = false;
      const n = ++window;
      session.post("Profiler.stop", (err, result) => {
        if (!err) writeFileSync(join(dir, `${process.pid}-${n}.cpuprofile`), JSON.stringify(result.profile));
      });
    });
  } else {
    setTimeout(() => session.post("Profiler.start", () => (started = true)), Number(process.env.CPU_PROFILE_DELAY_MS ?? 10_000)).unref();
    // The inspector session runs on this thread: the callback fires before exit completes.
    process.on("exit", () => {
      if (!started) return;
      session.post("Profiler.stop", (err, result) => {
        if (!err) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
      });
    });
  }
}
