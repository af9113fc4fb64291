#!/usr/bin/env bash
# SQLite and PostgreSQL side by side, in one run, for BENCHMARKS.md (issue 15):
# the offload CLI at 100,000 items (bench/cli.sh), the vault server as one and
# as three instances (bench/servebench), vault queries at 100,000 chunks and
# episodic writes and structured queries (Go benchmarks; COUNT statements,
# default 1,000,000). Each PostgreSQL run gets a fresh schema ctxkit_bench.
# Usage: PG=postgres://USER@HOST/DB?sslmode=disable bench/pg.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
pg=${PG:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
count=${COUNT:-1000000}
work=${1:-$(mktemp -d)}
mkdir -p "$work"
pgurl="$pg&search_path=ctxkit_bench"
fresh() { psql "$pg" -qc "DROP SCHEMA IF EXISTS ctxkit_bench CASCADE" -c "CREATE SCHEMA ctxkit_bench" 2>/dev/null; }

echo "## offload CLI (bench/cli.sh), SQLite"
CTXKIT_STORE= bench/cli.sh "$work"
echo "## offload CLI (bench/cli.sh), PostgreSQL"
fresh
CTXKIT_STORE="$pgurl" bench/cli.sh "$work"

echo "## ctxkit serve (bench/servebench)"
CGO_ENABLED=0 go build -o "$work/ctxkit" ./cmd/ctxkit
go run ./bench/servebench -ctxkit "$work/ctxkit" -duration 20s
fresh
go run ./bench/servebench -ctxkit "$work/ctxkit" -duration 20s -store "$pgurl"
fresh
go run ./bench/servebench -ctxkit "$work/ctxkit" -duration 20s -store "$pgurl" -instances 3

echo "## vault query at 100,000 chunks"
CTXKIT_TEST_POSTGRES=$pg CTXKIT_BENCH_FULL=1 go test -run '^$' -bench '^BenchmarkQuery$' -benchtime 200x ./vault/
echo "## episodic: batched writes, and queries at $count statements"
CTXKIT_TEST_POSTGRES=$pg go test -run '^$' -bench 'BenchmarkWriteMany' -benchtime 20x ./vault/episodic/pgepisodic/
CTXKIT_TEST_POSTGRES=$pg CTXKIT_BENCH_COUNT=$count go test -run '^$' -bench 'BenchmarkQuery' -benchtime 200x -timeout 60m ./vault/episodic/pgepisodic/
fresh
