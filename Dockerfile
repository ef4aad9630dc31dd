# One image for every service; compose and Kubernetes pick the service with
# SERVICE (gateway | checkout | orders | pricing | any service you add).
# Node 24, as the test suite runs on (npm test runs on the node-linux-* npm
# package of the same major; keep them in step). Not pinned by digest yet:
# the digest could not be looked up from the machine this was written on.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
# The whole workspace (not just the package.json files): npm ci needs every
# workspace the lock file names, and a service added with `npm run
# new-service` must not need a Dockerfile edit. .dockerignore keeps the
# context small.
COPY package.json package-lock.json tsconfig.json ./
COPY patches ./patches
COPY packages ./packages
COPY services ./services
# Production dependencies only. The embedded PostgreSQL and the Node 24
# binary from the npm registry (optional dependencies, for `npm start` and
# the tests) are not needed: compose runs a real server, and the image has
# its own node. postinstall applies patches/.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    NODE_OPTIONS="--import tsx" \
    TSX_DISABLE_CACHE=1
WORKDIR /app
# Sources and dependencies are root-owned and read-only to the service user.
COPY --from=deps /app /app
# The node image's unprivileged user (uid 1000).
USER node
ARG SERVICE=gateway
ENV SERVICE=${SERVICE}
STOPSIGNAL SIGTERM
CMD ["sh", "-c", "exec node services/${SERVICE}/src/main.ts"]
