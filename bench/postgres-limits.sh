#!/usr/bin/env bash
# npm run bench:postgres-limits: what the PostgreSQL server itself can do on this machine, without the
# service, for the capacity model (docs/capacity.md). Needs pgbench and pg_test_fsync (PostgreSQL's
# client and server packages) and TEST_DATABASE_URL; works in a scratch database it drops at the end.
set -euo pipefail

url=${TEST_DATABASE_URL:?set TEST_DATABASE_URL to a PostgreSQL server this may create a database on}
for tool in psql pgbench; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (Debian: apt-get install postgresql-client)" >&2; exit 1; }
done
seconds=${BENCH_SECONDS:-10}
scratch=petstore_limits_$$
scratch_url="${url%/*}/$scratch"
work=$(mktemp -d)
trap 'psql -qX "$url" -c "drop database if exists $scratch" >/dev/null; rm -rf "$work"' EXIT

psql -qX "$url" -c "create database $scratch" >/dev/null
# The pets table as migrations make it, 10,000 rows.
psql -qX "$scratch_url" >/dev/null <<'SQL'
create table pets (id bigint generated always as identity primary key, name text not null,
  status text not null, category_id bigint, created_at text not null);
create index pets_status_id on pets (status, id);
insert into pets (name, status, category_id, created_at)
  select 'Pet ' || i, 'available', 7, '2026-11-24T00:00:00.000Z' from generate_series(1, 10000) i;
analyze pets;
SQL

cat > "$work/get.sql" <<'SQL'
\set id random(1, 10000)
select id, name, status, category_id, created_at from pets where id = :id;
SQL
cat > "$work/page.sql" <<'SQL'
\set after random(0, 9980)
select id, name, status, category_id, created_at from pets where status = 'available' and id > :after order by id limit 21;
SQL
cat > "$work/insert.sql" <<'SQL'
insert into pets (name, status, category_id, created_at) values ('Bench', 'available', 7, '2026-11-24T00:00:00.000Z');
SQL
# What a create does on the service's store: one transaction under the lock that orders ids.
cat > "$work/ordered-insert.sql" <<'SQL'
begin;
select pg_advisory_xact_lock(7340001);
insert into pets (name, status, category_id, created_at) values ('Bench', 'available', 7, '2026-11-24T00:00:00.000Z');
commit;
SQL

run () { # label, clients, script
  local tps
  tps=$(pgbench -n -M prepared -c "$2" -j 2 -T "$seconds" -f "$work/$3" "$scratch_url" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  printf '| %s | %s | %.0f |\n' "$1" "$2" "$tps"
}

echo "PostgreSQL $(psql -qAtX "$url" -c 'show server_version'), $(nproc) cores shared with pgbench, ${seconds} s each"
echo "max_connections $(psql -qAtX "$url" -c 'show max_connections'), fsync $(psql -qAtX "$url" -c 'show fsync'), synchronous_commit $(psql -qAtX "$url" -c 'show synchronous_commit')"
echo
echo '| statement | clients | per second |'
echo '|---|---|---|'
run 'get one pet by id' 1 get.sql
run 'get one pet by id' 50 get.sql
run 'a page of 20 by status' 50 page.sql
run 'insert, one row a commit' 1 insert.sql
run 'insert, one row a commit' 50 insert.sql
run 'insert under the id-order lock' 50 ordered-insert.sql
if command -v pg_test_fsync >/dev/null || [ -x "$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | head -1)" ]; then
  fsync_test=$(command -v pg_test_fsync || ls /usr/lib/postgresql/*/bin/pg_test_fsync | head -1)
  flushes=$(cd "$work" && "$fsync_test" -s 2 2>/dev/null | sed -n 's/^ *fdatasync *\([0-9.]*\) ops\/sec.*/\1/p' | head -1)
  echo
  echo "fdatasync of this disk (pg_test_fsync, one 8 kB write each): ${flushes} a second"
fi
