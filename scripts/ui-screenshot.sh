#!/usr/bin/env bash
# Takes a headless-Chromium screenshot of a session's page in the Temporal
# Web UI, to check by eye that sessions show there (summary, activities named
# "agent · step N", the agents table in the current details).
#
#   make demo                                  # leaves a session in .conclave/dev/temporal.db
#   scripts/ui-screenshot.sh [WORKFLOW_ID] [OUT.png]
#
# Needs Debian's chromium (apt-get install chromium). Starts `conclave dev`
# on free ports for the duration of the shot, then stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${2:-ui-session.png}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium not found: apt-get install chromium" >&2; exit 1; }
[ -x bin/conclave ] || make build >/dev/null

port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
ui=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
log=$(mktemp)
bin/conclave dev --port "$port" --ui-port "$ui" >"$log" 2>&1 &
dev=$!
trap 'kill $dev 2>/dev/null; wait $dev 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 120); do grep -q "Press Ctrl-C" "$log" && break; sleep 0.5; done
grep -q "Press Ctrl-C" "$log" || { cat "$log" >&2; exit 1; }

id=${1:-$(bin/temporal workflow list --address "127.0.0.1:$port" --limit 1 -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["execution"]["workflowId"])')}
url="http://127.0.0.1:$ui/namespaces/default/workflows/$id"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$(mktemp -d)" --window-size=1500,1300 --virtual-time-budget=15000 \
  --screenshot="$out" "$url" 2>/dev/null
echo "screenshot of $url in $out"
