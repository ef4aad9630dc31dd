import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { schemaErrors, unknownFieldErrors } from "./schema.js";
import { container, find, validPlatform } from "./testing/fixture.js";

describe("schema checks", () => {
  test("the valid platform passes the schemas and has no unknown field", async () => {
    assert.deepEqual(await schemaErrors(validPlatform()), []);
    assert.deepEqual(unknownFieldErrors(validPlatform()), []);
  });

  test("a wrongly typed field fails the schema", async () => {
    const objects = validPlatform();
    const port = container(objects, "gateway").ports?.[0];
    assert.ok(port);
    (port as { containerPort: unknown }).containerPort = "8080";
    const errors = await schemaErrors(objects);
    assert.ok(
      errors.some((e) => /Deployment\/gateway: .*containerPort must be integer/.test(e)),
      errors.join("\n"),
    );
  });

  test("a missing required field fails the schema", async () => {
    const objects = validPlatform();
    const d = find(objects, "Deployment", "orders") as unknown as { spec: Record<string, unknown> };
    delete d.spec["selector"];
    const errors = await schemaErrors(objects);
    assert.ok(
      errors.some((e) => /Deployment\/orders: .*selector/.test(e)),
      errors.join("\n"),
    );
  });

  test("an unknown kind has no schema", async () => {
    const errors = await schemaErrors([{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } }]);
    assert.deepEqual(errors, ["Widget/w: no schema for example.com/v1 Widget"]);
  });

  test("a misspelt field is an unknown field", () => {
    const objects = validPlatform();
    const c = container(objects, "checkout") as unknown as Record<string, unknown>;
    c["readinessprobe"] = c["readinessProbe"];
    delete c["readinessProbe"];
    const errors = unknownFieldErrors(objects);
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(errors[0] ?? "", /^Deployment\/checkout: .*'"?readinessprobe"?' does not exist/);
  });

  test("the schemas are Kubernetes 1.34's, the pinned kubectl's", async () => {
    // Container.restartPolicyRules is new in 1.34: known here, unknown to older schemas.
    const objects = validPlatform();
    container(objects, "orders").restartPolicyRules = [{ action: "Restart", exitCodes: { operator: "In", values: [42] } }];
    assert.deepEqual(await schemaErrors(objects), []);
    assert.deepEqual(unknownFieldErrors(objects), []);
  });
});
