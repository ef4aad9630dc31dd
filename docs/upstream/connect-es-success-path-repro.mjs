// Error objects a successful unary call makes in connect-es (docs/upstream/README.md,
// report 4), on plain connect-es without this project's patches:
//
//   mkdir repro && cd repro && cp <this file> . && npm init -y >/dev/null &&
//   npm install @connectrpc/connect@2.3.0 @connectrpc/connect-node@2.3.0 @bufbuild/protobuf@2.13.0 &&
//   node connect-es-success-path-repro.mjs
//
// Prints, on 2.3.0 and Node 24 (a new DOMException per signal; "sentinel completed early"
// per response; the timings vary by machine):
//   handler context signals: 100 calls, 100 distinct abort reasons
//   client call signals:     100 calls, 100 distinct abort reasons
//   ConnectErrors made by connect-node's client: 100
//   reason-less abort(): 6.8 µs, abort(shared reason): 1.0 µs
// In this repository (patched, patches/README.md) the first three lines read 1, 1 and 0:
// `node docs/upstream/connect-es-success-path-repro.mjs`.
import * as http2 from "node:http2";
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";

// repro.v1.EchoService { rpc Echo(Msg) returns (Msg); } message Msg { string text = 1; }
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from("CrECCgplY2hvLnByb3RvEghyZXByby52MSIZCgNNc2cSEgoEdGV4dBgBIAEoCVIEdGV4dDIzCgtFY2hvU2VydmljZRIkCgRFY2hvEg0ucmVwcm8udjEuTXNnGg0ucmVwcm8udjEuTXNnSrgBCgYSBAAAAzQKCAoBDBIDAAASCggKAQISAwEAEQoJCgIEABIDAgAgCgoKAwQAARIDAggLCgwKBQQAAgAFEgMCDhQKCwoEBAACABIDAg4eCgwKBQQAAgABEgMCFRkKDAoFBAACAAMSAwIcHQoJCgIGABIDAwA0CgoKAwYAARIDAwgTCgsKBAYAAgASAwMWMgoMCgUGAAIAARIDAxoeCgwKBQYAAgACEgMDHyIKDAoFBgACAAMSAwMtMGIGcHJvdG8z0vYDBAgAGAA=", "base64")));
const EchoService = registry.getService("repro.v1.EchoService");

const handlerSignals = [];
const server = http2.createServer(
  connectNodeAdapter({
    routes(router) {
      router.service(EchoService, {
        echo(req, ctx) {
          handlerSignals.push(ctx.signal);
          return { text: req.text };
        },
      });
    },
  }),
);
const sessions = new Set();
server.on("session", (s) => sessions.add(s));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const clientSignals = [];
const transport = createGrpcTransport({
  baseUrl: `http://127.0.0.1:${server.address().port}`,
  interceptors: [(next) => (req) => (clientSignals.push(req.signal), next(req))],
});
const client = createClient(EchoService, transport);
await client.echo({ text: "warm-up" });
handlerSignals.length = clientSignals.length = 0;

// Every ConnectError sets its prototype in its constructor: counted there, when connect-node's client made it.
const setPrototypeOf = Object.setPrototypeOf;
let connectErrors = 0;
Object.setPrototypeOf = (o, proto) => {
  if (proto === ConnectError.prototype && /node-universal-client/.test(new Error().stack ?? "")) connectErrors++;
  return setPrototypeOf(o, proto);
};
for (let i = 0; i < 100; i++) await client.echo({ text: `call ${i}` });
await new Promise((r) => setTimeout(r, 50)); // the last handler's context ends after its answer
Object.setPrototypeOf = setPrototypeOf;

const reasons = (signals) => new Set(signals.map((s) => s.reason)).size;
console.log(`handler context signals: ${handlerSignals.length} calls, ${reasons(handlerSignals)} distinct abort reasons`);
console.log(`client call signals:     ${clientSignals.length} calls, ${reasons(clientSignals)} distinct abort reasons`);
console.log(`ConnectErrors made by connect-node's client: ${connectErrors}`);

const n = 200_000;
let t = performance.now();
for (let i = 0; i < n; i++) new AbortController().abort();
const bare = ((performance.now() - t) * 1000) / n;
const shared = new DOMException("This operation was aborted", "AbortError");
t = performance.now();
for (let i = 0; i < n; i++) new AbortController().abort(shared);
console.log(`reason-less abort(): ${bare.toFixed(1)} µs, abort(shared reason): ${(((performance.now() - t) * 1000) / n).toFixed(1)} µs`);
for (const s of sessions) s.destroy();
server.close();
