// Promises a unary gRPC call makes in connect-es, whose ES2017 build ships every async
// generator as TypeScript's emulation (docs/upstream/README.md, report 5), on plain
// connect-es without this project's patches:
//
//   mkdir repro && cd repro && cp <this file> . && npm init -y >/dev/null &&
//   npm install @connectrpc/connect@2.3.0 @connectrpc/connect-node@2.3.0 @bufbuild/protobuf@2.13.0 &&
//   node connect-es-async-generator-repro.mjs
//
// Server and client in one process, 2,000 sequential calls after a warm-up. It prints the
// bytes the process allocates per call (V8's sampling heap profiler, objects collected since
// counted too: an estimate, steady to a few percent) and the CPU per call. On 2.3.0 and
// Node 24: about 190 KiB per call. With the seven files compiled for ES2018 instead (and
// nothing else changed): about 142 KiB. In this repository, with every patch of
// patches/README.md: about 140 KiB.
// `node docs/upstream/connect-es-async-generator-repro.mjs`.
import * as http2 from "node:http2";
import { Session } from "node:inspector/promises";
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";

// repro.v1.EchoService { rpc Echo(Msg) returns (Msg); } message Msg { string text = 1; }
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from("CrECCgplY2hvLnByb3RvEghyZXByby52MSIZCgNNc2cSEgoEdGV4dBgBIAEoCVIEdGV4dDIzCgtFY2hvU2VydmljZRIkCgRFY2hvEg0ucmVwcm8udjEuTXNnGg0ucmVwcm8udjEuTXNnSrgBCgYSBAAAAzQKCAoBDBIDAAASCggKAQISAwEAEQoJCgIEABIDAgAgCgoKAwQAARIDAggLCgwKBQQAAgAFEgMCDhQKCwoEBAACABIDAg4eCgwKBQQAAgABEgMCFRkKDAoFBAACAAMSAwIcHQoJCgIGABIDAwA0CgoKAwYAARIDAwgTCgsKBAYAAgASAwMWMgoMCgUGAAIAARIDAxoeCgwKBQYAAgACEgMDHyIKDAoFBgACAAMSAwMtMGIGcHJvdG8z0vYDBAgAGAA=", "base64")));
const EchoService = registry.getService("repro.v1.EchoService");

const server = http2.createServer(connectNodeAdapter({ routes: (router) => router.service(EchoService, { echo: (req) => ({ text: req.text }) }) }));
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const client = createClient(EchoService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.address().port}` }));

for (let i = 0; i < 500; i++) await client.echo({ text: "warm" });
const calls = 2000;
const started = process.cpuUsage();
for (let i = 0; i < calls; i++) await client.echo({ text: "hello" });
const cpu = process.cpuUsage(started);
const session = new Session();
session.connect();
await session.post("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
for (let i = 0; i < calls; i++) await client.echo({ text: "hello" });
const { profile } = await session.post("HeapProfiler.stopSampling");
const bytes = (node) => node.selfSize + node.children.reduce((sum, c) => sum + bytes(c), 0);
console.log(`allocated per call (server and client): ${(bytes(profile.head) / calls / 1024).toFixed(1)} KiB`);
console.log(`CPU per call (server and client, no profiler): ${((cpu.user + cpu.system) / calls).toFixed(0)} µs`);
server.close();
process.exit(0);
