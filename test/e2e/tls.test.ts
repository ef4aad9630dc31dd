/**
 * The chain over TLS, as real processes with certificates made for the
 * test: the gateway serving TLS on its one port (gRPC, Connect over
 * HTTP/1.1, gRPC-Web), then every hop inside on mutual TLS, where an inner
 * server refuses a client without a certificate, or with one for a name
 * its manifest does not list as a caller.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import * as net from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { checkoutV1, pricingV1 } from "@platform/proto";
import { effectiveDependencies, envPrefix, readServiceManifests } from "@platform/registry";
import { eventually, logLines, opensslSkip, startTestPlatform, TestCertificateAuthority, type TestPlatform } from "@platform/test-support";

const manifests = readServiceManifests().filter((m) => m.deploy);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A platform whose gateway serves TLS; with `mutual`, every service has a
 * certificate for its name and the hops between them are mutual TLS
 * (https:// dependency URLs, TLS_CA_FILE).
 */
async function startTlsPlatform(ca: TestCertificateAuthority, mutual: boolean): Promise<TestPlatform> {
  // Certificates first (openssl takes a while), ports last: a port picked free is free only until
  // another test file takes it, so the platform starts right after they are picked.
  const certs = new Map(manifests.filter((m) => m.edge || mutual).map((m) => [m.name, ca.issue(m.name)]));
  const ports: Record<string, { port: number; adminPort: number }> = {};
  for (const m of manifests) ports[m.name] = { port: await freePort(), adminPort: await freePort() };
  const serviceEnv: Record<string, Record<string, string>> = {};
  for (const m of manifests) {
    const cert = certs.get(m.name);
    if (!cert) continue;
    serviceEnv[m.name] = {
      TLS_CERT_FILE: cert.certFile,
      TLS_KEY_FILE: cert.keyFile,
      ...(mutual
        ? {
            TLS_CA_FILE: ca.caFile,
            ...Object.fromEntries(
              effectiveDependencies(m, manifests).map((d) => [`${envPrefix(d.service)}_URL`, `https://127.0.0.1:${ports[d.service]!.port}`]),
            ),
          }
        : {}),
    };
  }
  return startTestPlatform({ ports, serviceEnv });
}

const httpsUrl = (p: TestPlatform) => p.gatewayUrl.replace(/^http:/, "https:");

function publicClients(p: TestPlatform, ca: TestCertificateAuthority) {
  const baseUrl = httpsUrl(p);
  const trust = { ca: readFileSync(ca.caFile) };
  return {
    grpc: createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl, nodeOptions: trust })),
    "connect-json": createClient(
      checkoutV1.CheckoutService,
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, nodeOptions: trust }),
    ),
    "grpc-web": createClient(checkoutV1.CheckoutService, createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions: trust })),
  };
}

async function placeOrderEverywhere(p: TestPlatform, ca: TestCertificateAuthority): Promise<void> {
  for (const [protocol, client] of Object.entries(publicClients(p, ca))) {
    const customerId = `tls-${protocol}-${randomUUID()}`;
    const { order } = await client.placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
    assert.ok(order?.id, `${protocol}: an order`);
    const rows = await p.sql("SELECT id FROM orders.orders WHERE customer_id = $1", [customerId]);
    assert.equal(rows.length, 1, `${protocol}: stored`);
  }
}

describe("TLS at the gateway", { skip: opensslSkip }, () => {
  let ca: TestCertificateAuthority;
  let p: TestPlatform;
  before(async () => {
    ca = new TestCertificateAuthority();
    p = await startTlsPlatform(ca, false);
  });
  after(async () => {
    await p?.close();
    ca?.remove();
  });

  test("gRPC (h2) and Connect and gRPC-Web (http/1.1) on the one TLS port; orders reach the database", async () => {
    await placeOrderEverywhere(p, ca);
  });

  test("plain text to the TLS port is not served", async () => {
    const plain = createClient(checkoutV1.CheckoutService, createConnectTransport({ baseUrl: p.gatewayUrl, httpVersion: "1.1" }));
    await assert.rejects(plain.listProducts({}));
  });
});

describe("mutual TLS inside", { skip: opensslSkip }, () => {
  let ca: TestCertificateAuthority;
  let p: TestPlatform;
  before(async () => {
    ca = new TestCertificateAuthority();
    p = await startTlsPlatform(ca, true);
  });
  after(async () => {
    await p?.close();
    ca?.remove();
  });

  test("the whole chain works over mutual TLS", async () => {
    await placeOrderEverywhere(p, ca);
  });

  test("an internal hop refuses a client without a certificate, and one whose name is not an expected caller", async () => {
    const pricingUrl = p.services.pricing.url.replace(/^http:/, "https:");
    const trust = readFileSync(ca.caFile);
    const noCert = createClient(pricingV1.PricingService, createGrpcTransport({ baseUrl: pricingUrl, nodeOptions: { ca: trust } }));
    const stranger = ca.issue("mallory");
    const wrongName = createClient(
      pricingV1.PricingService,
      createGrpcTransport({
        baseUrl: pricingUrl,
        nodeOptions: { ca: trust, cert: readFileSync(stranger.certFile), key: readFileSync(stranger.keyFile) },
      }),
    );
    const served = () => logLines(p, "pricing").filter((l) => l["msg"] === "rpc" && l["procedure"] === "/pricing.v1.PricingService/ListProducts").length;
    const servedBefore = served();
    for (const client of [noCert, wrongName]) {
      await assert.rejects(client.listProducts({}), (e: unknown) => {
        assert.ok(e instanceof ConnectError, String(e));
        // Refused at the connection, before any request is read: connect-node names a reset or a
        // TLS alert by when it saw it, never with an answer's code (and pricing logs no rpc, below).
        assert.ok([Code.Unavailable, Code.Internal, Code.Aborted, Code.Canceled].includes(e.code), `refused at the connection: ${e.code} ${e.message}`);
        return true;
      });
    }
    await eventually(
      () => logLines(p, "pricing").some((l) => l["msg"] === "connection refused" && /mallory/.test(String(l["reason"]))),
      "pricing logged the stranger's refusal",
    );
    assert.ok(logLines(p, "pricing").some((l) => l["msg"] === "connection refused" && /handshake/.test(String(l["reason"]))));
    assert.equal(served(), servedBefore, "neither call reached a handler");
  });
});
