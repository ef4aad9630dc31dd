import { describe } from "node:test";
import { flags, passesValidPlatform } from "../testing/check.js";
import { find, networkPolicy } from "../testing/fixture.js";
import { networkPolicies } from "./network-policies.js";

describe("policy: network-policies", () => {
  passesValidPlatform(networkPolicies);
  flags(networkPolicies, "orders reachable from the gateway", /lets gateway call orders; its callers are checkout/, (o) =>
    networkPolicy(o, "orders-ingress").spec?.ingress?.[0]?.from?.push({ podSelector: { matchLabels: { "app.kubernetes.io/name": "gateway" } } }),
  );
  flags(networkPolicies, "orders reachable from another namespace", /opens rpc of orders to sources outside the namespace/, (o) =>
    networkPolicy(o, "orders-ingress").spec?.ingress?.[0]?.from?.push({ namespaceSelector: {} }),
  );
  flags(
    networkPolicies,
    "policy rule without ports",
    /checkout-ingress.*a rule without ports opens every port/,
    (o) => delete networkPolicy(o, "checkout-ingress").spec?.ingress?.[0]?.ports,
  );
  flags(networkPolicies, "admin port open to the world", /opens admin of gateway to any source/, (o) =>
    networkPolicy(o, "gateway-ingress").spec?.ingress?.push({ ports: [{ port: "admin" }] }),
  );
  flags(networkPolicies, "admin port open to the namespace", /opens the admin port of checkout to pods in the namespace/, (o) =>
    networkPolicy(o, "checkout-ingress").spec?.ingress?.push({
      from: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "gateway" } } }],
      ports: [{ port: 9081 }],
    }),
  );
  flags(networkPolicies, "open to every pod of the namespace", /opens orders to every pod in the namespace/, (o) =>
    networkPolicy(o, "orders-ingress").spec?.ingress?.[0]?.from?.push({ podSelector: {} }),
  );
  flags(networkPolicies, "a port that is neither rpc nor admin", /rule opens unknown port 5432/, (o) =>
    networkPolicy(o, "orders-ingress").spec?.ingress?.[0]?.ports?.push({ port: 5432 }),
  );
  flags(networkPolicies, "no default deny", /needs a default-deny-ingress policy/, (o) =>
    o.splice(o.indexOf(find(o, "NetworkPolicy", "default-deny-ingress")), 1),
  );
  // The default-deny policy selects every pod, so this shows only without it.
  flags(networkPolicies, "a service no policy selects", /Deployment\/checkout: no NetworkPolicy selects its pods/, (o) => {
    for (const name of ["checkout-ingress", "default-deny-ingress"]) o.splice(o.indexOf(find(o, "NetworkPolicy", name)), 1);
  });
  flags(networkPolicies, "caller cut off", /NetworkPolicy: checkout cannot reach orders's RPC port/, (o) =>
    networkPolicy(o, "orders-ingress").spec?.ingress?.[0]?.from?.pop(),
  );
  flags(networkPolicies, "the gateway closed", /the gateway's RPC port must be open to any source/, (o) => {
    const spec = networkPolicy(o, "gateway-ingress").spec;
    if (spec) spec.ingress = spec.ingress?.slice(1);
  });
  flags(networkPolicies, "matchExpressions", /NetworkPolicy\/orders-ingress: matchExpressions are not supported/, (o) => {
    const spec = networkPolicy(o, "orders-ingress").spec;
    if (spec) spec.podSelector = { matchExpressions: [{ key: "app.kubernetes.io/name", operator: "In", values: ["orders"] }] };
  });
});
