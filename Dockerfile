# One image for every service; compose and Kubernetes pick the service with
# SERVICE (gateway | checkout | orders | pricing).
# Node 20 is what the test suite runs on; keep them in step.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY packages/proto/package.json packages/proto/
COPY packages/runtime/package.json packages/runtime/
COPY packages/resilience/package.json packages/resilience/
COPY packages/database/package.json packages/database/
COPY packages/embedded-postgres/package.json packages/embedded-postgres/
COPY packages/launcher/package.json packages/launcher/
COPY services/gateway/package.json services/gateway/
COPY services/checkout/package.json services/checkout/
COPY services/orders/package.json services/orders/
COPY services/pricing/package.json services/pricing/
# Production dependencies only; the embedded PostgreSQL (an optional
# dependency for `npm start`) is not needed: compose runs a real server.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    NODE_OPTIONS="--import tsx"
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY packages ./packages
COPY services ./services
# tsx caches compiled files; keep its cache off the (read-only) root filesystem.
ENV TSX_DISABLE_CACHE=1
# The node image's unprivileged user.
USER node
ARG SERVICE=gateway
ENV SERVICE=${SERVICE}
STOPSIGNAL SIGTERM
CMD ["sh", "-c", "exec node services/${SERVICE}/src/main.ts"]
