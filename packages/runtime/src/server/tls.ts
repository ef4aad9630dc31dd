import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { createSecureContext, type PeerCertificate } from "node:tls";
import type { EnvReader } from "../config/config.js";
import type { Logger } from "../observability/logger.js";

/**
 * Transport security of a service (docs/security.md). With a certificate
 * and key its RPC port speaks TLS (ALPN h2 and, at the edge, http/1.1).
 * With a CA too, the hops inside are mutual: each inner server asks for a
 * client certificate signed by that CA and accepts only the callers its
 * manifest expects, and each client presents its own certificate and
 * trusts only that CA. The operator port stays plain HTTP: it is never
 * published.
 */
export interface TlsConfig {
  certFile: string;
  keyFile: string;
  /** The CA of the internal certificates: mutual TLS on the hops inside. */
  caFile: string | undefined;
  /** The names (certificate CN or DNS SAN) an inner server accepts client certificates for. */
  allowedCallers: readonly string[];
  /** How often the files are checked for a change (new certificates are used without a restart). */
  reloadIntervalMs: number;
}

/** TLS_CERT_FILE, TLS_KEY_FILE, TLS_CA_FILE, TLS_ALLOWED_CALLERS (default: the callers in the manifests), TLS_RELOAD_INTERVAL_MS. */
export function readTlsConfig(r: EnvReader, manifestCallers: () => readonly string[]): TlsConfig | undefined {
  // Read as paths: the reader's <VAR>_FILE convention would read the files' content instead.
  const certFile = r.optionalString("TLS_CERT_FILE");
  const keyFile = r.optionalString("TLS_KEY_FILE");
  const caFile = r.optionalString("TLS_CA_FILE");
  const allowed = r.optionalString("TLS_ALLOWED_CALLERS");
  const reloadIntervalMs = r.int("TLS_RELOAD_INTERVAL_MS", 5000, { min: 100, max: 3_600_000 });
  if (certFile === undefined && keyFile === undefined) {
    if (caFile !== undefined) r.problems.push("TLS_CA_FILE needs TLS_CERT_FILE and TLS_KEY_FILE: mutual TLS presents this service's own certificate");
    return undefined;
  }
  if (certFile === undefined || keyFile === undefined) {
    r.problems.push("TLS_CERT_FILE and TLS_KEY_FILE go together");
    return undefined;
  }
  const allowedCallers =
    allowed !== undefined
      ? allowed
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s !== "")
      : caFile !== undefined
        ? manifestCallers()
        : [];
  const tlsConfig = { certFile, keyFile, caFile, allowedCallers, reloadIntervalMs };
  try {
    readTlsFiles(tlsConfig);
  } catch (e) {
    r.problems.push(`TLS files cannot be read: ${e instanceof Error ? e.message : String(e)}`);
  }
  return tlsConfig;
}

/** TLS on the RPC port: the certificate (reloaded when its files change) and, for mutual TLS, who may call. */
export interface ListenTls {
  files: ReloadingTlsFiles;
  /**
   * Mutual TLS: a client must present a certificate signed by the CA whose
   * name (DNS SAN or CN) is one of these; other connections are closed
   * after the handshake. Undefined: no client certificate is asked for (the
   * public edge).
   */
  allowedCallers?: ReadonlySet<string>;
  /** Told about each connection refused, and why. */
  onRefused?: (reason: string) => void;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
}

function readTlsFiles(config: Pick<TlsConfig, "certFile" | "keyFile" | "caFile">): TlsMaterial {
  return {
    cert: readFileSync(config.certFile),
    key: readFileSync(config.keyFile),
    ca: config.caFile === undefined ? undefined : readFileSync(config.caFile),
  };
}

/**
 * The certificate, key and CA, read again when one of the files changes
 * (polled every `reloadIntervalMs`: a renamed-over file and a Kubernetes
 * secret's symlink swap are seen as well as an edit). A set that cannot be
 * read or used (a key that does not match its certificate, a file caught
 * half-written) is reported and the previous one kept.
 */
export class ReloadingTlsFiles {
  private current: TlsMaterial;
  private readonly listeners = new Set<(m: TlsMaterial) => void>();
  private readonly files: string[];
  private readonly check = () => this.reload();

  constructor(
    readonly config: TlsConfig,
    private readonly onReloadFailure: (e: Error) => void = () => {},
    /** Checks a new set before it is used; throws when it cannot be (tls.createSecureContext does). */
    private readonly validate: (m: TlsMaterial) => void = () => {},
  ) {
    this.current = readTlsFiles(config);
    this.files = [config.certFile, config.keyFile, ...(config.caFile === undefined ? [] : [config.caFile])];
  }

  get material(): TlsMaterial {
    return this.current;
  }

  /** Calls `listener` with each new set; starts watching the files on the first listener. */
  onChange(listener: (m: TlsMaterial) => void): () => void {
    if (this.listeners.size === 0) for (const f of this.files) watchFile(f, { interval: this.config.reloadIntervalMs, persistent: false }, this.check);
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) for (const f of this.files) unwatchFile(f, this.check);
    };
  }

  /** Reads the files now (the watcher calls it on a change). */
  reload(): void {
    let next: TlsMaterial;
    try {
      next = readTlsFiles(this.config);
      if (next.cert.equals(this.current.cert) && next.key.equals(this.current.key) && equalOrBothAbsent(next.ca, this.current.ca)) return;
      this.validate(next);
    } catch (e) {
      this.onReloadFailure(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    this.current = next;
    for (const l of this.listeners) l(next);
  }
}

function equalOrBothAbsent(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

/** The names a peer certificate stands for: its DNS subject alternative names and its common name. */
export function certificateNames(cert: PeerCertificate): string[] {
  const names: string[] = [];
  for (const entry of (cert.subjectaltname ?? "").split(",")) {
    const m = /^\s*DNS:(.+)$/.exec(entry);
    if (m) names.push(m[1]!.trim());
  }
  const cn = cert.subject?.CN;
  if (typeof cn === "string") names.push(cn);
  return names;
}

/**
 * What listen() needs for a server's RPC port, or undefined without TLS:
 * the reloading files (a bad new set is logged and the old one kept), and
 * on an inner hop with a CA, the callers it accepts. The edge asks its
 * public clients for no certificate.
 */
export function serverTls(config: { tls?: TlsConfig | undefined; deadline: { edge: boolean } }, logger: Logger): ListenTls | undefined {
  const { tls: tlsConfig } = config;
  if (!tlsConfig) return undefined;
  const files = new ReloadingTlsFiles(
    tlsConfig,
    (e) => logger.warn({ err: e.message }, "TLS files not reloaded; the previous certificate stays in use"),
    (m) => void createSecureContext({ cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}) }),
  );
  files.onChange(() => logger.info({ certFile: tlsConfig.certFile }, "TLS certificate reloaded"));
  const mutual = tlsConfig.caFile !== undefined && !config.deadline.edge;
  return {
    files,
    ...(mutual ? { allowedCallers: new Set(tlsConfig.allowedCallers) } : {}),
    onRefused: (reason) => logger.warn({ reason }, "connection refused"),
  };
}
