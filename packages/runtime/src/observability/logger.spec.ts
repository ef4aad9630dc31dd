import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pino } from "pino";
import { batchMs, flushWhileWritten, isoTime, mergeTraceFields, sonicBoomPatchProblems } from "./logger.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A batching destination as createLogger makes one, into a file, with its writes counted. */
function destination(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), "logger-spec-"));
  const file = join(dir, "log");
  const dest = pino.destination({ dest: file, sync: false, minLength: 4096 });
  const writes: number[] = [];
  dest.on("write", (n: number) => writes.push(n));
  flushWhileWritten(dest);
  t.after(() => {
    dest.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dest, writes, text: () => readFileSync(file, "utf8") };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await sleep(batchMs);
  }
  assert.fail(`never: ${what}`);
}

test("an idle destination is not written to; a line is written once a tick comes, and then it is idle again", async (t) => {
  const { dest, writes, text } = destination(t);
  await new Promise((r) => dest.once("ready", r));
  await sleep(batchMs * 6);
  assert.deepEqual(writes, [], "six ticks with nothing logged: no write (sonic-boom's flush would write an empty buffer)");
  dest.write('{"msg":"one"}\n');
  await until(() => text() === '{"msg":"one"}\n', "the line is in the file");
  await until(() => writes.at(-1) === 0, "the tick after the data wrote the empty rest");
  const settled = writes.length;
  await sleep(batchMs * 6);
  assert.equal(writes.length, settled, "idle again: no more writes");
});

test("lines that arrive while a write is under way are written too, without another line to push them", async (t) => {
  const { dest, text } = destination(t);
  await new Promise((r) => dest.once("ready", r));
  const lines: string[] = [];
  // Past the batch size (a write starts at once), then small lines while it is under way.
  for (let i = 0; i < 200; i++) {
    const line = `{"msg":"${"x".repeat(40)} ${i}"}\n`;
    lines.push(line);
    dest.write(line);
  }
  await until(() => text() === lines.join(""), "every line is in the file");
});

test("a destination destroyed with a line due is not flushed again (sonic-boom throws from flush() once destroyed)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "logger-spec-"));
  const dest = pino.destination({ dest: join(dir, "log"), sync: false, minLength: 4096 });
  flushWhileWritten(dest);
  await new Promise((r) => dest.once("ready", r));
  const thrown: string[] = [];
  const onUncaught = (e: unknown) => thrown.push(String(e));
  process.on("uncaughtException", onUncaught);
  try {
    dest.write('{"msg":"due"}\n');
    dest.destroy();
    await sleep(batchMs * 4);
  } finally {
    process.off("uncaughtException", onUncaught);
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(thrown, []);
});

test("isoTime writes what pino's stdTimeFunctions.isoTime writes, character for character", () => {
  const realNow = Date.now;
  try {
    const base = Date.UTC(2026, 11, 31, 23, 59, 58, 0);
    // Every millisecond across two second boundaries (and a year's), then a few far apart.
    const times = [...Array.from({ length: 2500 }, (_, i) => base + i), 0, 999, 1000, 1_700_000_000_001, 4_102_444_799_999];
    for (const t of times) {
      Date.now = () => t;
      assert.equal(isoTime(), pino.stdTimeFunctions.isoTime(), `at ${t}`);
      assert.equal(isoTime(t), pino.stdTimeFunctions.isoTime(), `at ${t}`);
    }
  } finally {
    Date.now = realNow;
  }
});

test("mergeTraceFields: the line as it is when there is nothing to add, else pino's merge (fields first)", () => {
  const line = { procedure: "/a.v1.A/Get", code: "ok" };
  assert.equal(mergeTraceFields(line, {}), line);
  assert.deepEqual(Object.keys(mergeTraceFields({ ...line }, { trace_id: "t" })), ["trace_id", "procedure", "code"]);
  assert.deepEqual(mergeTraceFields({ ...line }, { trace_id: "t" }), Object.assign({ trace_id: "t" }, line));
});

test("sonic-boom as installed carries the platform's patch; an unpatched flush is named", () => {
  const destination = pino.destination({ dest: join(tmpdir(), "sonic-boom-patch-check.log"), sync: true });
  try {
    assert.deepEqual(sonicBoomPatchProblems(destination), []);
  } finally {
    destination.destroy();
  }
  const unpatched = {
    flushSync() {
      // sonic-boom 4.2.1's condition, which retried anything but EAGAIN/EBUSY for ever
      const shouldRetry = false;
      if (shouldRetry && !shouldRetry) throw new Error("never");
    },
  };
  assert.match(sonicBoomPatchProblems(unpatched).join(), /retries a broken pipe for ever/);
});
