import { test } from "node:test";
import assert from "node:assert/strict";
import { servicesFormFromEnv } from "./services-form.js";

test("PLATFORM_SERVICES_FROM picks the test platforms' form; unset or empty, the launcher's default; anything else is refused", () => {
  assert.equal(servicesFormFromEnv({ PLATFORM_SERVICES_FROM: "build" }), "build");
  assert.equal(servicesFormFromEnv({ PLATFORM_SERVICES_FROM: "source" }), "source");
  assert.equal(servicesFormFromEnv({}), undefined);
  assert.equal(servicesFormFromEnv({ PLATFORM_SERVICES_FROM: "" }), undefined);
  assert.throws(() => servicesFormFromEnv({ PLATFORM_SERVICES_FROM: "dist" }), /PLATFORM_SERVICES_FROM must be "build" or "source", got "dist"/);
});
