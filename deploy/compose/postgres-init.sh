#!/bin/sh
# Runs once, when the postgres container initialises an empty volume.
# Least privilege: each service gets its own login role that owns its own
# schema and nothing else. Passwords come from the environment (see
# README "Deploy with docker compose"); none is stored in the repository.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v orders_pw="$ORDERS_DB_PASSWORD" -v pricing_pw="$PRICING_DB_PASSWORD" -v receipts_pw="$RECEIPTS_DB_PASSWORD" -v db="$POSTGRES_DB" <<'SQL'
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
CREATE ROLE orders LOGIN PASSWORD :'orders_pw';
CREATE ROLE pricing LOGIN PASSWORD :'pricing_pw';
CREATE ROLE receipts LOGIN PASSWORD :'receipts_pw';
CREATE SCHEMA orders AUTHORIZATION orders;
CREATE SCHEMA pricing AUTHORIZATION pricing;
CREATE SCHEMA receipts AUTHORIZATION receipts;
GRANT CONNECT ON DATABASE :"db" TO orders, pricing, receipts;
SQL
