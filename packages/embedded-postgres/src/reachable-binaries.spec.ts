import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reachableBinaries } from "./reachable-binaries.js";
import { unprivilegedUser } from "./run-as-user.js";

test("binaries under a private directory are copied where the database user can run them", { skip: process.getuid?.() !== 0 ? "needs root" : false }, () => {
  const user = unprivilegedUser()!;
  const home = mkdtempSync(join(tmpdir(), "private-")); // 0700, like /root
  try {
    const bin = join(home, "pkg", "native", "bin");
    mkdirSync(bin, { recursive: true });
    for (const name of ["postgres", "initdb", "pg_ctl"]) writeFileSync(join(bin, name), `#!/bin/sh\necho ${name} ${Date.now()}\n`, { mode: 0o755 });
    chmodSync(home, 0o700);
    const original = { postgres: join(bin, "postgres"), initdb: join(bin, "initdb"), pg_ctl: join(bin, "pg_ctl") };
    const usable = reachableBinaries(original, user);
    assert.notEqual(usable.postgres, original.postgres);
    assert.ok(usable.postgres.startsWith(tmpdir()));
    for (const p of Object.values(usable)) assert.ok(existsSync(p));
    assert.deepEqual(reachableBinaries(usable, user), usable, "reachable binaries are used as they are");
    rmSync(join(usable.postgres, "..", ".."), { recursive: true, force: true });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
