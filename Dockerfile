# One image for every service; compose and Kubernetes pick the service with
# SERVICE (gateway | checkout | orders | pricing | any service you add).
# Node 20 is what the test suite runs on; keep them in step.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
# The whole workspace (not just the package.json files): npm ci needs every
# workspace the lock file names, and a service added with `npm run
# new-service` must not need a Dockerfile edit. .dockerignore keeps the
# context small.
COPY package.json package-lock.json tsconfig.json ./
COPY patches ./patches
COPY packages ./packages
COPY services ./services
# Production dependencies only. The embedded PostgreSQL (an optional
# dependency, for `npm start` and the tests) is not needed: compose runs a
# real server. postinstall applies patches/.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
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
