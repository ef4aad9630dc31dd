import { containerWhere, literal } from "../manifests.js";
import { withContainer, type Policy } from "./policy.js";
import { credentialInUrl } from "./secrets.js";

export const environment: Policy = {
  name: "environment",
  rule: "Ports named rpc and admin that PORT and ADMIN_PORT repeat, SERVICE set to the name, only variables some config reads, DATABASE_URL from the service's key of the database Secret and only where read, no credential in plain text, nothing on the host's network.",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const cw = containerWhere(w);
      const env = w.env;
      out.push(...w.envProblems);
      const facts = m.facts.services[w.name];
      if (w.rpcPort === undefined || w.adminPort === undefined) out.push(`${cw}: needs container ports named rpc and admin`);
      if (literal(env, "PORT") !== String(w.rpcPort)) out.push(`${cw}: PORT must equal the rpc container port (${w.rpcPort})`);
      if (literal(env, "ADMIN_PORT") !== String(w.adminPort)) out.push(`${cw}: ADMIN_PORT must equal the admin container port (${w.adminPort})`);
      if (literal(env, "SERVICE") !== w.name) out.push(`${cw}: SERVICE must be ${w.name}`);
      const host = literal(env, "HOST");
      if (host !== undefined && host !== "0.0.0.0" && host !== "::") out.push(`${cw}: HOST=${host} is not reachable from the kubelet's probes or other pods; use 0.0.0.0`);
      if (facts !== undefined) {
        for (const v of env.keys()) if (!facts.env.has(v)) out.push(`${cw}: ${v} is read by no config of ${w.name} (a typo is silently ignored)`);
      }
      for (const [v, value] of env) {
        if ("value" in value && credentialInUrl.test(value.value)) out.push(`${cw}: ${v} holds a credential in plain text`);
      }
      const needsDatabase = facts?.needsDatabase ?? false;
      const db = env.get("DATABASE_URL");
      const secret = m.facts.databaseSecret;
      if (db === undefined) {
        if (needsDatabase) out.push(`${cw}: DATABASE_URL is required (secretKeyRef to ${secret})`);
      } else if (!needsDatabase) out.push(`${cw}: DATABASE_URL given to a service that does not use the database`);
      else if (!("secret" in db)) out.push(`${cw}: DATABASE_URL must come from a secretKeyRef, not ${"value" in db ? "a literal" : "elsewhere"}`);
      else if (db.secret.name !== secret || db.secret.key !== `${w.name}-url`) {
        out.push(`${cw}: DATABASE_URL must come from Secret ${secret}, key ${w.name}-url (docs/kubernetes.md)`);
      }
      for (const p of w.container.ports ?? []) if (p.hostPort !== undefined) out.push(`${cw}: hostPort exposes port ${p.containerPort} outside the cluster`);
      if (w.pod.hostNetwork) out.push(`Deployment/${w.name}: hostNetwork exposes every port outside the cluster`);
    }
    return out;
  },
};
