/**
 * Allocation profiles of a service process, by signal (what
 * lab/profile/profile-chains.ts `--heap` uses): each SIGUSR2 starts a window
 * of V8's sampling heap profiler or ends the open one, written as
 * <CPU_PROFILE_DIR>/<pid>-<n>.heapprofile. Objects the garbage collector
 * has freed since are counted too, so a window holds every byte allocated in
 * it (an estimate from samples every 4 KiB), not only what survived: what a
 * request costs the collector. Summarize with
 * lab/profile/summarize-heap-profile.ts, or open in Chrome DevTools.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";

const dir = process.env.CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  let started = false;
  let window = 0;
  process.on("SIGUSR2", () => {
    if (!started) {
      started = true;
      session.post("HeapProfiler.startSampling", {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      return;
    }
    started = false;
    const n = ++window;
    session.post("HeapProfiler.stopSampling", (err, result) => {
      if (!err) writeFileSync(join(dir, `${process.pid}-${n}.heapprofile`), JSON.stringify(result.profile));
    });
  });
}
