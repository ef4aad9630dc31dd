import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { intakeRehearsal } from "./questions.js";

test("an intake rehearsal is a test that cuts intake to nothing by hand, not one that only lowers it", () => {
  const dir = mkdtempSync(join(tmpdir(), "audit-rehearsal-"));
  try {
    writeFileSync(join(dir, "partial.test.ts"), `fetch(admin + "/admin/intake", { method: "PUT", body: '{"fraction": 0.5}' });`);
    writeFileSync(join(dir, "elsewhere.ts"), `fetch(admin + "/admin/intake", { method: "PUT", body: '{"fraction": 0}' });`);
    assert.equal(intakeRehearsal(dir), undefined, "a partial cut, or a file that is not a test, is no rehearsal");
    writeFileSync(join(dir, "cut.test.ts"), `fetch(admin + "/admin/intake", { method: "PUT", body: '{"fraction": 0}' });`);
    assert.match(intakeRehearsal(dir) ?? "", /cut\.test\.ts$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
