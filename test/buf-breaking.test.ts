/**
 * The breaking-change check that `npm test` runs (scripts/proto-breaking.ts),
 * on temporary copies of this repository's proto/ in a git repository of
 * their own: it fails for a breaking change on a branch and on main itself,
 * passes for an additive one, and passes for this repository as it is.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { breakingBaseline, checkBreaking } from "../scripts/proto-breaking.js";

const checkoutProto = "proto/checkout/v1/checkout.proto";
const noOverride = { ...process.env, BUF_BREAKING_AGAINST: "" };

/** A git repository holding a copy of proto/ and buf.yaml, committed on main. */
function repoCopy(): { dir: string; git: (...args: string[]) => string; edit: (from: string, to: string) => void; [Symbol.dispose]: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "breaking-"));
  cpSync("proto", join(dir, "proto"), { recursive: true });
  cpSync("buf.yaml", join(dir, "buf.yaml"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args], { cwd: dir, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "the API");
  const edit = (from: string, to: string) => {
    const file = join(dir, checkoutProto);
    const text = readFileSync(file, "utf8");
    assert.ok(text.includes(from), `${checkoutProto} contains ${from}`);
    writeFileSync(file, text.replace(from, to));
  };
  return { dir, git, edit, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

test("a field deleted on a branch fails, against where the branch left main", () => {
  using repo = repoCopy();
  repo.git("checkout", "-q", "-b", "feature");
  repo.edit("  int32 quantity = 2 [(buf.validate.field).int32 = {\n    gt: 0\n    lte: 1000\n  }];\n", "");
  repo.git("commit", "-q", "-am", "drop quantity");
  repo.git("commit", "-q", "--allow-empty", "-m", "a later commit that does not touch proto/");
  const result = checkBreaking(repo.dir, noOverride);
  assert.equal(result.ok, false);
  assert.deepEqual(result.baseline, { ref: repo.git("rev-parse", "main").trim(), why: "where this branch left main" });
  assert.match(result.output, /checkout\/v1\/checkout\.proto.*Previously present field "2" with name "quantity" on message "OrderItemRequest" was deleted/);
});

test("a method renamed on main itself fails, against the commit before the last change to proto/", () => {
  using repo = repoCopy();
  const before = repo.git("rev-parse", "HEAD").trim();
  repo.edit("rpc GetOrder(", "rpc FetchOrder(");
  repo.git("commit", "-q", "-am", "rename GetOrder");
  writeFileSync(join(repo.dir, "README.md"), "later work\n");
  repo.git("add", "README.md");
  repo.git("commit", "-q", "-m", "a later commit that does not touch proto/");
  const result = checkBreaking(repo.dir, noOverride);
  assert.equal(result.ok, false);
  assert.equal("ref" in result.baseline && result.baseline.ref, before);
  assert.match(result.output, /Previously present RPC "GetOrder" on service "CheckoutService" was deleted/);
});

test("an uncommitted type change fails too: the working tree is what is checked", () => {
  using repo = repoCopy();
  repo.git("checkout", "-q", "-b", "feature");
  repo.git("commit", "-q", "--allow-empty", "-m", "work on the branch");
  repo.edit("  string customer_id = 1 [(buf.validate.field).string = {", "  int64 customer_id = 1 [(buf.validate.field).string = {");
  const result = checkBreaking(repo.dir, noOverride);
  assert.equal(result.ok, false);
  assert.match(result.output, /customer_id.*type/i);
});

test("an added field passes", () => {
  using repo = repoCopy();
  repo.git("checkout", "-q", "-b", "feature");
  repo.edit(
    "  string order_id = 1 [(buf.validate.field).string.uuid = true];\n}",
    "  string order_id = 1 [(buf.validate.field).string.uuid = true];\n  bool include_items = 2;\n}",
  );
  repo.git("commit", "-q", "-am", "add a field");
  const result = checkBreaking(repo.dir, noOverride);
  assert.equal(result.output, "");
  assert.equal(result.ok, true);
});

test("a repository whose only commit created proto/ has nothing to compare with: skipped, said so", () => {
  using repo = repoCopy();
  assert.deepEqual(breakingBaseline(repo.dir, noOverride), { skip: "the commit that created proto/ has no parent to compare with" });
});

test("this repository's API has no breaking change", () => {
  const result = checkBreaking(process.cwd());
  assert.equal(result.output, "");
  assert.equal(result.ok, true);
  // Passing because it was compared, not because it was skipped: where the
  // history holds the parent of the last commit that changed proto/ (a
  // full clone, as CI makes), the check must have had a baseline.
  const last = execFileSync("git", ["log", "-1", "--format=%H", "--", "proto"], { encoding: "utf8" }).trim();
  let parentKnown = true;
  try {
    execFileSync("git", ["rev-parse", "--verify", "--quiet", `${last}^`], { stdio: "ignore" });
  } catch {
    parentKnown = false;
  }
  if (parentKnown && !process.env["BUF_BREAKING_AGAINST"]) assert.ok("ref" in result.baseline, `compared, not skipped: ${JSON.stringify(result.baseline)}`);
});
