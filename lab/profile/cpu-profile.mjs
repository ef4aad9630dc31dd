/**
 * A CPU profile of any service process, for docs/performance.md.
 *
 *   CPU_PROFILE_DIR=/tmp/prof NODE_OPTIONS="--import ./lab/profile/cpu-profile.mjs" npm start
 *
 * (node refuses --cpu-prof in NODE_OPTIONS, and the launcher passes the
 * environment on to every service.) Sampling starts CPU_PROFILE_DELAY_MS
 * after the process starts (default 10000: past start-up and warm-up) and
 * the profile is written when the process exits, as
 * <dir>/<pid>.cpuprofile: open it in Chrome DevTools or speedscope.
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
  setTimeout(() => session.post("Profiler.start", () => (started = true)), Number(process.env.CPU_PROFILE_DELAY_MS ?? 10_000)).unref();
  // The inspector session runs on this thread: the callback fires before exit completes.
  process.on("exit", () => {
    if (!started) return;
    session.post("Profiler.stop", (err, result) => {
      if (!err) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
