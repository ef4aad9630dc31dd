import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Why the TLS tests cannot run here, or false: they need the openssl
 * command. Outside CI they are skipped by name without it; in CI (.ci/run
 * installs it) they run and fail loudly.
 */
export const opensslSkip: string | false = hasOpenssl() || process.env["CI"] ? false : "openssl is not installed (apt-get install openssl)";

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A certificate and its key, as files (TLS_CERT_FILE, TLS_KEY_FILE). */
export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/**
 * A throw-away certificate authority for tests, made with openssl in a
 * fresh temporary directory (no private key is ever committed): `issue`
 * signs a certificate for a name, valid for that name, localhost and
 * 127.0.0.1, usable by a server and a client alike.
 */
export class TestCertificateAuthority {
  readonly dir = mkdtempSync(join(tmpdir(), "platform-tls-"));
  readonly caFile = join(this.dir, "ca.crt");
  private readonly caKey = join(this.dir, "ca.key");
  private serial = 0;

  constructor(name = "platform-test-ca") {
    openssl(
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"],
      ["-keyout", this.caKey, "-out", this.caFile, "-subj", `/CN=${name}`],
    );
  }

  /** Signs a certificate for `name` (its CN and first DNS name); written to `<file>.crt` and `<file>.key` (default: the name). */
  issue(name: string, file = name): CertificateFiles {
    const certFile = join(this.dir, `${file}.crt`);
    const keyFile = join(this.dir, `${file}.key`);
    const csr = join(this.dir, `${file}.csr`);
    const ext = join(this.dir, `${file}.ext`);
    writeFileSync(ext, `subjectAltName=DNS:${name},DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n`);
    openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"], ["-keyout", keyFile, "-out", csr, "-subj", `/CN=${name}`]);
    openssl(
      ["x509", "-req", "-days", "2", "-set_serial", String(++this.serial + Date.now())],
      ["-in", csr, "-CA", this.caFile, "-CAkey", this.caKey, "-out", certFile, "-extfile", ext],
    );
    return { certFile, keyFile };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function openssl(command: string[], files: string[]): void {
  execFileSync("openssl", [...command, ...files], { stdio: ["ignore", "ignore", "pipe"] });
}
