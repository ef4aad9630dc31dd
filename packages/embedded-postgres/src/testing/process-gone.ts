import { setTimeout as sleep } from "node:timers/promises";

/** True when `pid` no longer exists (a process we may not signal still exists). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/** Polls until `pid` is gone; false if it is still there after `timeoutMs`. */
export async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    if (isGone(pid)) return true;
    await sleep(50);
  }
  return isGone(pid);
}
