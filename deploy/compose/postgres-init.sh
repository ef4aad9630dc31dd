#!/bin/sh
# generated from services/*/service.json by npm run generate:services; do not edit.
# Runs once, when the postgres container initialises an empty volume.
# Least privilege: each service gets its own login role that owns its own
# schema and nothing else. Passwords come from secret files (compose
# `secrets:`, see README "Deploy with docker compose"); none is stored in
# the repository or in an environment variable.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v pricing_pw="$(cat "$PRICING_DB_PASSWORD_FILE")" -v orders_pw="$(cat "$ORDERS_DB_PASSWORD_FILE")" -v receipts_pw="$(cat "$RECEIPTS_DB_PASSWORD_FILE")" -v db="$POSTGRES_DB" <<'SQL'
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
CREATE ROLE pricing LOGIN PASSWORD :'pricing_pw';
CREATE ROLE orders LOGIN PASSWORD :'orders_pw';
CREATE ROLE receipts LOGIN PASSWORD :'receipts_pw';
CREATE SCHEMA pricing AUTHORIZATION pricing;
CREATE SCHEMA orders AUTHORIZATION orders;
CREATE SCHEMA receipts AUTHORIZATION receipts;
GRANT CONNECT ON DATABASE :"db" TO pricing, orders, receipts;
SQL
