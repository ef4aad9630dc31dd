import { containerWhere, literal } from "../manifests.js";
import { withContainer, type Policy } from "./policy.js";
import { credentialInUrl } from "./secrets.js";

export const environment: Policy = {
  name: "environment",
  rule: "Ports named rpc and admin that PORT and ADMIN_PORT repeat, SERVICE set to the name, only variables some config reads, DATABASE_URL_FILE naming a file mounted from the service's key of the database Secret, and only where the database is read, no credential in plain text, nothing on the host's network.",
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
      if (host !== undefined && host !== "0.0.0.0" && host !== "::")
        out.push(`${cw}: HOST=${host} is not reachable from the kubelet's probes or other pods; use 0.0.0.0`);
      if (facts !== undefined) {
        for (const v of env.keys()) if (!facts.env.has(v)) out.push(`${cw}: ${v} is read by no config of ${w.name} (a typo is silently ignored)`);
      }
      for (const [v, value] of env) {
        if ("value" in value && credentialInUrl.test(value.value)) out.push(`${cw}: ${v} holds a credential in plain text`);
      }
      const needsDatabase = facts?.needsDatabase ?? false;
      // The database URL holds a password: a file mounted from the database
      // Secret (key <name>-url), never a variable (docs/kubernetes.md).
      const secret = m.facts.databaseSecret;
      const db = env.get("DATABASE_URL_FILE");
      if (env.has("DATABASE_URL")) out.push(`${cw}: DATABASE_URL must not be set; DATABASE_URL_FILE names a file from Secret ${secret}`);
      if (db === undefined) {
        if (needsDatabase) out.push(`${cw}: DATABASE_URL_FILE is required (a file from Secret ${secret})`);
      } else if (!needsDatabase) out.push(`${cw}: DATABASE_URL_FILE given to a service that does not use the database`);
      else {
        const path = "value" in db ? db.value : "";
        const mount = (w.container.volumeMounts ?? []).find((vm) => path.startsWith(`${vm.mountPath.replace(/\/$/, "")}/`));
        const volume = w.pod.volumes?.find((v) => v.name === mount?.name)?.secret;
        const file = mount ? path.slice(mount.mountPath.replace(/\/$/, "").length + 1) : "";
        const item = volume?.items?.find((i) => i.path === file);
        if (volume?.secretName !== secret || item?.key !== `${w.name}-url`) {
          out.push(`${cw}: DATABASE_URL_FILE must name a file mounted from Secret ${secret}, key ${w.name}-url (docs/kubernetes.md)`);
        }
      }
      for (const p of w.container.ports ?? []) if (p.hostPort !== undefined) out.push(`${cw}: hostPort exposes port ${p.containerPort} outside the cluster`);
      if (w.pod.hostNetwork) out.push(`Deployment/${w.name}: hostNetwork exposes every port outside the cluster`);
    }
    return out;
  },
};
