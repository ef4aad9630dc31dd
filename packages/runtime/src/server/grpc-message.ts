/**
 * The value of a `grpc-message` header or trailer, percent-encoded as the
 * gRPC spec (PROTOCOL-HTTP2.md, "Status-Message") says: the message's UTF-8
 * bytes, each byte outside printable ASCII (0x20-0x7E), and "%", as "%XX".
 *
 * Not `encodeURIComponent`: it also escapes ";", ",", "/", "?", "&", "=" and
 * more, which a spec-following client leaves escaped (grpc-js decodes with
 * `decodeURI`: "must be positive%2C got 0"). A lone UTF-16 surrogate (which
 * makes `encodeURIComponent` throw) is written as U+FFFD.
 *
 * The connect-es patch (patches/README.md) writes connect-es's own
 * grpc-message trailers the same way.
 */
export function encodeGrpcMessage(message: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(message)) return message;
  let out = "";
  for (const b of new TextEncoder().encode(message)) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
