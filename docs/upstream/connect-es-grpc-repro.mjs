// Four gRPC answers of a connect-es server (docs/upstream/README.md), on
// plain connect-es without this project's patch or workarounds. Reproduced
// with 2.1.2 and 2.3.0, Node 20 and 24:
//
//   mkdir repro && cd repro && cp <this file> . && npm init -y >/dev/null &&
//   npm install @connectrpc/connect@2.3.0 @connectrpc/connect-node@2.3.0 @bufbuild/protobuf@2.13.0 &&
//   node connect-es-grpc-repro.mjs
//
// Prints (2.1.2 and 2.3.0 alike):
//   1. garbage protobuf:       grpc-status 13, grpc-message "parse%20binary%3A%20illegal%20tag..."
//   2. message with ; , / :    grpc-status 3, grpc-message "used%20for%20a%20different%20request%3B%20use..."
//   3. lone surrogate:         no answer within 2000 ms   (and "URIError: URI malformed" logged)
//   4. truncated gzip:         grpc-status 13, grpc-message "decompression%20failed"
import * as http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

// repro.v1.EchoService { rpc Echo(Msg) returns (Msg); } message Msg { string text = 1; }
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from("CrECCgplY2hvLnByb3RvEghyZXByby52MSIZCgNNc2cSEgoEdGV4dBgBIAEoCVIEdGV4dDIzCgtFY2hvU2VydmljZRIkCgRFY2hvEg0ucmVwcm8udjEuTXNnGg0ucmVwcm8udjEuTXNnSrgBCgYSBAAAAzQKCAoBDBIDAAASCggKAQISAwEAEQoJCgIEABIDAgAgCgoKAwQAARIDAggLCgwKBQQAAgAFEgMCDhQKCwoEBAACABIDAg4eCgwKBQQAAgABEgMCFRkKDAoFBAACAAMSAwIcHQoJCgIGABIDAwA0CgoKAwYAARIDAwgTCgsKBAYAAgASAwMWMgoMCgUGAAIAARIDAxoeCgwKBQYAAgACEgMDHyIKDAoFBgACAAMSAwMtMGIGcHJvdG8z0vYDBAgAGAA=", "base64")));
const EchoService = registry.getService("repro.v1.EchoService");

const server = http2.createServer(
  connectNodeAdapter({
    routes(router) {
      router.service(EchoService, {
        echo(req) {
          // An error message quoting the caller's input, as validation errors do.
          throw new ConnectError(req.text, Code.InvalidArgument);
        },
      });
    },
  }),
);
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const session = http2.connect(`http://127.0.0.1:${server.address().port}`);

/** One gRPC call with a raw body; resolves with grpc-status and the raw grpc-message, or "no answer". */
function call(body, contentType = "application/grpc", timeoutMs = 2000, extraHeaders = {}) {
  return new Promise((resolve) => {
    const stream = session.request({ ":method": "POST", ":path": "/repro.v1.EchoService/Echo", "content-type": contentType, te: "trailers", ...extraHeaders });
    let headers = {};
    const timer = setTimeout(() => { stream.close(); resolve("no answer within " + timeoutMs + " ms"); }, timeoutMs);
    stream.on("response", (h) => (headers = h));
    stream.on("trailers", (t) => (headers = { ...headers, ...t }));
    stream.on("data", () => {});
    stream.on("end", () => { clearTimeout(timer); resolve(`grpc-status ${headers["grpc-status"]}, grpc-message ${JSON.stringify(headers["grpc-message"])}`); });
    stream.end(body);
  });
}
const frame = (payload) => Buffer.concat([Buffer.from([0, 0, 0, 0, payload.length]), payload]);
const msg = (text) => { const t = Buffer.from(text, "utf8"); return frame(Buffer.concat([Buffer.from([0x0a, t.length]), t])); };

// 1. A body that is not valid protobuf: expected INVALID_ARGUMENT (3), as a malformed JSON body gets.
console.log("1. garbage protobuf:      ", await call(frame(Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x01]))));
// 2. grpc-message is percent-encoded with encodeURIComponent: ";" "," "/" become %3B %2C %2F,
//    which the gRPC spec leaves as they are (only bytes outside 0x20-0x7E and "%" are encoded);
//    grpc-js decodes with decodeURI and shows its users "%3B", "%2C".
console.log("2. message with ; , / :   ", await call(msg("used for a different request; use a new key, or /retry")));
// 3. A lone UTF-16 surrogate in the message: JSON allows the escape "\\ud800", and the error
//    for a gRPC+JSON body that is not a message quotes it. encodeURIComponent throws
//    (URIError) in setTrailerStatus, and the call is never answered.
console.log("3. lone surrogate:        ", await call(frame(Buffer.from('"\\ud800"')), "application/grpc+json"));
// 4. A gzip-compressed message whose data ends early: expected INVALID_ARGUMENT (3), as corrupt
//    gzip data gets; connect-node maps zlib's Z_BUF_ERROR ("unexpected end of file") to INTERNAL.
const gz = gzipSync(Buffer.from([0x0a, 0x02, 0x68, 0x69]));
const truncated = gz.subarray(0, gz.length - 5);
console.log("4. truncated gzip:        ", await call(Buffer.concat([Buffer.from([1, 0, 0, 0, truncated.length]), truncated]), "application/grpc", 2000, { "grpc-encoding": "gzip" }));
session.close();
server.close();
