/**
 * TLS on the RPC port, with certificates made for the test: one port for
 * h2 and http/1.1 by ALPN; mutual TLS that accepts only the expected
 * callers; certificates reloaded when their files change; a dependency
 * client's connection options (dependency-tls.ts).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, readFileSync } from "node:fs";
import * as http2 from "node:http2";
import * as https from "node:https";
import { X509Certificate } from "node:crypto";
import * as tls from "node:tls";
import { opensslSkip, TestCertificateAuthority, type CertificateFiles } from "@platform/test-support";
import { listen, type Listener } from "./listen.js";
import { readTlsConfig, ReloadingTlsFiles, type TlsConfig } from "./tls.js";
import { EnvReader } from "../config/config.js";
import { dependencyTls } from "../client/dependency-tls.js";

let ca: TestCertificateAuthority;
let server: CertificateFiles;
before(() => {
  if (opensslSkip) return;
  ca = new TestCertificateAuthority();
  server = ca.issue("checkout");
});
after(() => ca?.remove());

function tlsConfig(over: Partial<TlsConfig> = {}): TlsConfig {
  return { ...server, caFile: ca.caFile, allowedCallers: ["gateway"], reloadIntervalMs: 100, ...over };
}

/** A listener answering each request with the HTTP version it came on. */
async function start(opts: { http1: boolean; allowedCallers?: string[]; files?: ReloadingTlsFiles; refused?: string[] }): Promise<Listener> {
  const files = opts.files ?? new ReloadingTlsFiles(tlsConfig());
  return listen({
    host: "127.0.0.1",
    port: 0,
    http1: opts.http1,
    handler: (req, res) => res.end(req.httpVersion),
    tls: {
      files,
      ...(opts.allowedCallers ? { allowedCallers: new Set(opts.allowedCallers) } : {}),
      onRefused: (reason) => opts.refused?.push(reason),
    },
  });
}

async function stop(l: Listener): Promise<void> {
  l.stopAccepting();
  l.destroy();
  await l.closed;
}

/** An HTTP/2 request over TLS; resolves with the body, rejects when the connection is refused. */
function h2Get(port: number, options: http2.SecureClientSessionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://localhost:${port}`, options);
    session.on("error", reject);
    session.on("close", () => reject(new Error("connection closed")));
    const req = session.request({ ":path": "/" });
    req.on("error", reject);
    let body = "";
    let answered = false;
    req.on("response", () => (answered = true));
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      session.close();
      if (answered) resolve(body);
      else reject(new Error("closed without an answer"));
    });
  });
}

function h1Get(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: "localhost", port, path: "/", ca: readFileSync(ca.caFile) }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve(body));
      })
      .on("error", reject);
  });
}

/** The serial number of the certificate a server presents now. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "localhost", port, ca: readFileSync(ca.caFile), ALPNProtocols: ["h2"] }, () => {
      resolve(s.getPeerCertificate().serialNumber);
      s.destroy();
    });
    s.on("error", reject);
  });
}

const serialOf = (certFile: string) => new X509Certificate(readFileSync(certFile)).serialNumber;

describe("TLS on the RPC port", { skip: opensslSkip }, () => {
  test("one port: HTTP/2 when ALPN chooses h2, HTTP/1.1 when it chooses http/1.1", async () => {
    const l = await start({ http1: true });
    try {
      assert.equal(await h2Get(l.port, { ca: readFileSync(ca.caFile) }), "2.0");
      assert.equal(await h1Get(l.port), "1.1");
    } finally {
      await stop(l);
    }
  });

  test("an inner server without http1 refuses an http/1.1-only client", async () => {
    const l = await start({ http1: false });
    try {
      await assert.rejects(h1Get(l.port));
    } finally {
      await stop(l);
    }
  });

  test("mutual TLS: an expected caller is served; no certificate, or one for another name, is refused", async () => {
    const refused: string[] = [];
    const l = await start({ http1: false, allowedCallers: ["gateway"], refused });
    const gateway = ca.issue("gateway");
    const mallory = ca.issue("mallory");
    const withCert = (c: CertificateFiles) => ({ ca: readFileSync(ca.caFile), cert: readFileSync(c.certFile), key: readFileSync(c.keyFile) });
    try {
      assert.equal(await h2Get(l.port, withCert(gateway)), "2.0");
      await assert.rejects(h2Get(l.port, { ca: readFileSync(ca.caFile) }), "no certificate");
      await assert.rejects(h2Get(l.port, withCert(mallory)), "mallory");
      assert.ok(
        refused.some((r) => /mallory.*not an expected caller/.test(r)),
        refused.join("; "),
      );
      assert.ok(
        refused.some((r) => /handshake/.test(r)),
        refused.join("; "),
      );
    } finally {
      await stop(l);
    }
  });

  test("a new certificate is served once its files change, without a restart; a broken one is not", async () => {
    const first = ca.issue("checkout", "reload");
    const failures: string[] = [];
    const files = new ReloadingTlsFiles(
      { ...first, caFile: undefined, allowedCallers: [], reloadIntervalMs: 100 },
      (e) => failures.push(e.message),
      (m) => void tls.createSecureContext({ cert: m.cert, key: m.key }),
    );
    const l = await start({ http1: false, files });
    try {
      assert.equal(await servedSerial(l.port), serialOf(first.certFile));
      const second = ca.issue("checkout", "reload-next");
      copyFileSync(second.keyFile, first.keyFile);
      copyFileSync(second.certFile, first.certFile);
      const deadline = Date.now() + 5000;
      while ((await servedSerial(l.port)) !== serialOf(second.certFile)) {
        assert.ok(Date.now() < deadline, "the new certificate was not served within 5 s");
        await new Promise((r) => setTimeout(r, 100));
      }
      // A key that does not match the certificate: kept out, the last good pair stays.
      copyFileSync(ca.issue("checkout", "unrelated").keyFile, first.keyFile);
      files.reload();
      assert.ok(failures.length > 0);
      assert.equal(await servedSerial(l.port), serialOf(second.certFile));
    } finally {
      await stop(l);
    }
  });

  test("a dependency client's options: its own certificate and the CA, for https only", async () => {
    const l = await start({ http1: false, allowedCallers: ["gateway"] });
    try {
      const gateway = ca.issue("gateway");
      const config = tlsConfig({ ...gateway });
      assert.deepEqual(dependencyTls(config, "http://127.0.0.1:1"), {});
      const { nodeOptions } = dependencyTls(config, `https://localhost:${l.port}`);
      assert.ok(nodeOptions);
      assert.equal(await h2Get(l.port, nodeOptions), "2.0");
    } finally {
      await stop(l);
    }
  });
});

describe("TLS configuration", { skip: opensslSkip }, () => {
  const read = (env: Record<string, string>, callers: readonly string[] = ["gateway"]) => {
    const r = new EnvReader(env);
    return { config: readTlsConfig(r, () => callers), problems: r.problems };
  };

  test("none by default; a certificate and key; with a CA, the manifests' callers unless TLS_ALLOWED_CALLERS names others", () => {
    assert.deepEqual(read({}), { config: undefined, problems: [] });
    const files = { TLS_CERT_FILE: server.certFile, TLS_KEY_FILE: server.keyFile };
    assert.deepEqual(read(files).config?.allowedCallers, []);
    assert.deepEqual(read({ ...files, TLS_CA_FILE: ca.caFile }).config?.allowedCallers, ["gateway"]);
    assert.deepEqual(read({ ...files, TLS_CA_FILE: ca.caFile, TLS_ALLOWED_CALLERS: "ops, batch" }).config?.allowedCallers, ["ops", "batch"]);
  });

  test("each mistake is named: a certificate without its key, a CA without a certificate, a file that cannot be read", () => {
    assert.deepEqual(read({ TLS_CERT_FILE: server.certFile }).problems, ["TLS_CERT_FILE and TLS_KEY_FILE go together"]);
    assert.match(read({ TLS_CA_FILE: ca.caFile }).problems.join(), /TLS_CA_FILE needs TLS_CERT_FILE and TLS_KEY_FILE/);
    assert.match(read({ TLS_CERT_FILE: "/nonexistent.crt", TLS_KEY_FILE: server.keyFile }).problems.join(), /TLS files cannot be read: .*nonexistent\.crt/);
  });
});
