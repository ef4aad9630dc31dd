/** Spec helpers: a policy run on the valid fixture, or on a copy with one thing broken. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { K8sObject } from "../objects.js";
import { policyViolations, type Policy } from "../policies/index.js";
import { fixtureFacts, validPlatform } from "./fixture.js";

export function violationsOf(policy: Policy, change?: (objects: K8sObject[]) => void): string[] {
  const objects = validPlatform();
  change?.(objects);
  return policyViolations(objects, fixtureFacts(), [policy]);
}

/** The passing manifest: the valid platform breaks none of the policy's rules. */
export function passesValidPlatform(policy: Policy): void {
  test("passes on the valid platform", () => assert.deepEqual(violationsOf(policy), []));
}

/** A failing manifest: the broken copy is named by a message matching `expected`. */
export function flags(policy: Policy, label: string, expected: RegExp, change: (objects: K8sObject[]) => void): void {
  test(label, () => {
    const found = violationsOf(policy, change);
    assert.ok(
      found.some((v) => expected.test(v)),
      `expected a violation matching ${expected}, got:\n  ${found.join("\n  ") || "(none)"}`,
    );
  });
}
