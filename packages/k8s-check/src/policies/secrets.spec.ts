import { describe } from "node:test";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import { flags, passesValidPlatform } from "../testing/check.js";
import { find } from "../testing/fixture.js";
import { secrets } from "./secrets.js";

describe("policy: secrets", () => {
  passesValidPlatform(secrets);
  flags(secrets, "a Secret in the manifests", /Secret\/platform-database: Secrets must not be part of the manifests/, (o) =>
    o.push({ apiVersion: "v1", kind: "Secret", metadata: { name: "platform-database" } }),
  );
  flags(secrets, "DATABASE_URL in a ConfigMap", /ConfigMap\/platform-common: DATABASE_URL looks like a credential/, (o) => {
    const cm = find<IConfigMap>(o, "ConfigMap", "platform-common");
    cm.data = { ...cm.data, DATABASE_URL: "postgres://x:y@db/platform" };
  });
  flags(secrets, "a password in any ConfigMap value", /ConfigMap\/platform-common: CACHE looks like a credential/, (o) => {
    const cm = find<IConfigMap>(o, "ConfigMap", "platform-common");
    cm.data = { ...cm.data, CACHE: "redis://user:secret@cache:6379" };
  });
});
