import assert from "node:assert/strict";
import { it } from "node:test";
import { Listeners } from "./listeners.js";

it("Listeners delivers to every listener, isolates a throwing one, and reports its error", () => {
  const errors: unknown[] = [];
  const l = new Listeners<number>((err) => errors.push(err));
  const seen: string[] = [];
  l.add((n) => seen.push(`a${n}`));
  l.add(() => {
    throw new Error("metrics bug");
  });
  const off = l.add((n) => seen.push(`c${n}`));
  l.emit(1);
  off();
  l.emit(2);
  assert.deepEqual(seen, ["a1", "c1", "a2"]);
  assert.equal(errors.length, 2);
  assert.match(String(errors[0]), /metrics bug/);
});

it("Listeners counts the same function added twice as two subscriptions", () => {
  const l = new Listeners<number>();
  let calls = 0;
  const f = () => calls++;
  const off = l.add(f);
  l.add(f);
  l.emit(0);
  off();
  l.emit(0);
  assert.equal(calls, 3);
});
