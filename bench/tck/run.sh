#!/usr/bin/env bash
# Runs the official A2A TCK (a2aproject/a2a-tck, branch 1.0-dev) against `npm start` and writes its
# per-binding result (docs/protocol.md §13.5). Not for CI: the TCK is a separate checkout.
#
#   bench/tck/run.sh <tck-dir> <binding> [python]
#
# <tck-dir>  a checkout of the TCK's 1.0-dev branch
# <binding>  jsonrpc | http_json | all
# [python]   a Python with the TCK's dependencies (pytest, pytest-asyncio, httpx, grpcio, protobuf,
#            googleapis-common-protos, jsonschema, Jinja2; pytest-html and gherkin-official are not
#            needed); default: python3
#
# The server runs with bench/tck/tck-config.json (the scripted `tck` agent as `default`, no auth,
# loopback webhooks allowed as local mode allows them, 100 stream slots for the TCK's one anonymous
# caller, which keeps streams open that it no longer reads: docs/protocol.md §13.5) on a port of its
# own; its log and the pytest output
# go to bench/results/tck-<binding>.log, the summary line to stdout.
#
# TCK_CONFIG=<file> runs the server with another configuration and TCK_SELECT=<expr> only the tests
# pytest's -k selects; CORE-CAP-004 needs an agent whose card declares the TCK's extension required
# (which every other test would then fail with -32008), so it runs on its own:
#   TCK_CONFIG=bench/tck/tck-config-required-extension.json TCK_SELECT=TestCapabilityExtensionRequired \
#     bench/tck/run.sh <tck-dir> all [python]
set -euo pipefail
tck_dir=$(cd "${1:?usage: run.sh <tck-dir> <binding> [python]}" && pwd)
binding=${2:?usage: run.sh <tck-dir> <binding> [python]}
python=${3:-python3}
repo=$(cd "$(dirname "$0")/../.." && pwd)
port=${TCK_PORT:-18787}
config=${TCK_CONFIG:-bench/tck/tck-config.json}
log="$repo/bench/results/tck-$binding${TCK_SELECT:+-selected}.log"
mkdir -p "$repo/bench/results"

cd "$repo"
npm start -- --port "$port" --config "$config" > "${log%.log}.server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/.well-known/agent-card.json" > /dev/null && break
  sleep 1
done
curl -sf "http://127.0.0.1:$port/.well-known/agent-card.json" > /dev/null || { echo "server did not start"; cat "${log%.log}.server.log"; exit 1; }

cd "$tck_dir"
set +e
"$python" -m pytest tests/compatibility --sut-host "http://127.0.0.1:$port" --webhook-host 127.0.0.1 \
  --transport "$binding" -q -rs -p no:cacheprovider ${TCK_SELECT:+-k "$TCK_SELECT"} > "$log" 2>&1
status=$?
set -e
summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$log" | tail -1 || true)
echo "$binding: ${summary:-no summary (exit $status), see $log}"
grep -E '^FAILED' "$log" || true
