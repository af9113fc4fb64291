#!/usr/bin/env bash
# Whole-process figures for BENCHMARKS.md: wall time and peak RSS of ctxkit
# CLI runs on the benchmark inputs (100,000-item JSON list, 50 MB text), on a
# fresh SQLite store. Usage: bench/cli.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mkdir -p "$work"
export CTXKIT_HOME="$work/home"
rm -rf "$CTXKIT_HOME"

CGO_ENABLED=0 go build -o "$work/ctxkit" ./cmd/ctxkit
[ -f "$work/list.json" ] || go run ./bench/gen -out "$work"
ls -l "$work/list.json" "$work/text.txt" | awk '{print $5, $9}'

measure() { # name, then the command
  local name=$1; shift
  /usr/bin/time -v "$@" >"$work/out.json" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
  local wall rss
  wall=$(grep 'Elapsed (wall clock)' "$work/time.txt" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$work/time.txt" | awk '{print $NF}')
  printf '| %-34s | %10s | %8d MB |\n' "$name" "$wall" $((rss / 1024))
}

k="$work/ctxkit"
echo "| command | wall | peak RSS |"
echo "|---|---|---|"
measure "put list (100k items)" "$k" offload put --key list --tool bench "$work/list.json"
measure "result_pipe filter+group_by+sort" "$k" offload call result_pipe '{"workspace_id":"list","steps":[{"filter":{"year":{"$gte":2010},"category":{"$in":["ml","db","os"]}}},{"group_by":{"field":"author.name","metrics":{"n":"count","avg":"mean:score"}}},{"sort":{"field":"n","order":"desc"}},{"limit":10}]}'
measure "result_search top 10" "$k" offload call result_search '{"workspace_id":"list","query":"latency timeout","max_results":10}'
measure "result_paginate page 4990" "$k" offload call result_paginate '{"workspace_id":"list","page":4990,"size":20}'
measure "put text (50 MB)" "$k" offload put --key text --tool bench "$work/text.txt"
measure "result_search_in_text" "$k" offload call result_search_in_text '{"workspace_id":"text","query":"throughput latency"}'
measure "result_read_page (page 8000)" "$k" offload call result_read_page '{"workspace_id":"text","page":8000}'
