import type * as http2 from "node:http2";
import { createSecureContext } from "node:tls";
import { ReloadingTlsFiles, type TlsConfig, type TlsMaterial } from "../server/tls.js";

/** One watcher per service's TLS settings, shared by its dependency clients. */
const filesOf = new WeakMap<TlsConfig, ReloadingTlsFiles>();

/**
 * The connection options of a dependency client (connect-node's
 * `nodeOptions`): for an https:// dependency, this service's certificate
 * as its client certificate and the CA (TLS_CA_FILE) as the only one it
 * trusts, or the system's CAs without one. Each new connection takes the
 * certificate as it is then: the options object's secure context is
 * replaced when the files change (connect-node hands the same object to
 * every `http2.connect`); open connections keep theirs. Nothing for an
 * http:// dependency.
 */
export function dependencyTls(tls: TlsConfig | undefined, baseUrl: string): { nodeOptions?: http2.SecureClientSessionOptions } {
  if (!baseUrl.startsWith("https:") || tls === undefined) return {};
  let files = filesOf.get(tls);
  if (!files) {
    files = new ReloadingTlsFiles(tls, undefined, (m) => void secureContext(m));
    filesOf.set(tls, files);
  }
  const nodeOptions: http2.SecureClientSessionOptions = { secureContext: secureContext(files.material) };
  files.onChange((m) => {
    nodeOptions.secureContext = secureContext(m);
  });
  return { nodeOptions };
}

function secureContext(m: TlsMaterial) {
  return createSecureContext({ cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}) });
}
