import { describe } from "node:test";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container } from "../testing/fixture.js";
import { callGraph } from "./call-graph.js";

function setUrl(c: ReturnType<typeof container>, name: string, value: string): void {
  const e = c.env?.find((x) => x.name === name);
  if (e) e.value = value;
  else c.env?.push({ name, value });
}

describe("policy: call-graph", () => {
  passesValidPlatform(callGraph);
  flags(callGraph, "wrong dependency URL (the admin port)", /Deployment\/checkout: ORDERS_URL=http:\/\/orders-headless:9082 does not reach/, (o) =>
    setUrl(container(o, "checkout"), "ORDERS_URL", "http://orders-headless:9082"),
  );
  flags(
    callGraph,
    "a dependency through a ClusterIP Service (balanced per connection)",
    /Deployment\/checkout: ORDERS_URL=http:\/\/orders:8082 names Service\/orders, which has a cluster IP/,
    (o) => setUrl(container(o, "checkout"), "ORDERS_URL", "http://orders:8082"),
  );
  flags(callGraph, "not a URL", /Deployment\/gateway: CHECKOUT_URL=checkout is not a URL/, (o) => setUrl(container(o, "gateway"), "CHECKOUT_URL", "checkout"));
  flags(callGraph, "a call the graph does not have", /call graph: orders is called by \[checkout, gateway\], expected \[checkout\]/, (o) =>
    setUrl(container(o, "gateway"), "ORDERS_URL", "http://orders-headless:8082"),
  );
  flags(callGraph, "a call that is missing", /call graph: orders is called by \[\], expected \[checkout\]/, (o) => {
    const c = container(o, "checkout");
    c.env = c.env?.filter((e) => e.name !== "ORDERS_URL");
  });
});
