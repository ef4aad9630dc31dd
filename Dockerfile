# One image for every service; compose and Kubernetes pick the service with
# SERVICE (the name of any services/<name> with a service.json).
# The image runs compiled JavaScript: no TypeScript sources, tests, tsx,
# esbuild, typescript or patch-package in it (docs/deployment.md).
#
# Base: Node 24 (the line the tests run on; npm test runs on the
# node-linux-* npm package of the same major: keep them in step), Debian
# bookworm, slim. NOT PINNED BY DIGEST YET: the digest could not be looked
# up from the machine this was written on (no registry access). To pin it,
# resolve the tag where a registry is reachable:
#   docker buildx imagetools inspect node:24-bookworm-slim --format '{{json .Manifest.Digest}}'
# and make the default below `node:24-bookworm-slim@sha256:<that digest>`
# (one line; both stages use it), or pass --build-arg NODE_IMAGE=... .
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: install everything, compile, assemble what runs ------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The whole workspace (not just the package.json files): npm ci needs every
# workspace the lock file names, and a service added with `npm run
# new-service` must not need a Dockerfile edit. .dockerignore lets in only
# what the build reads.
COPY package.json package-lock.json tsconfig.json ./
COPY patches ./patches
COPY scripts ./scripts
COPY packages ./packages
COPY services ./services
# All dependencies, dev and optional included: the build runs on typescript
# and tsx (whose esbuild binary is an optional dependency, so it is never
# downloaded at build time), and postinstall applies patches/ with
# patch-package.
RUN npm ci --no-audit --no-fund
# dist/ for every workspace, then /runtime: the manifests, each workspace's
# package.json and "files" (dist/, migrations/), and node_modules pruned of
# dev and optional dependencies (the patched connect-es stays as npm ci
# left it). scripts/runtime-tree.ts refuses to finish if a development tool
# is left.
RUN npm run build && node --import tsx scripts/runtime-tree.ts /runtime

# --- runtime: node and the compiled services, nothing else ------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0
WORKDIR /app
# Root-owned and read-only to the service user.
COPY --from=build /runtime /app
# The node image's unprivileged user (uid 1000).
USER node
ARG SERVICE=gateway
ENV SERVICE=${SERVICE}
# Ready means serving (/readyz on the operator port, ADMIN_PORT). Plain
# node, no shell: the same check compose uses (it sets only the timing).
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=5 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.ADMIN_PORT+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["sh", "-c", "exec node services/${SERVICE}/dist/main.js"]
