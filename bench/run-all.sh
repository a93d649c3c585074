#!/usr/bin/env bash
# Builds Strata and runs every benchmark (about 10 minutes on the 2-core reference machine). Results:
# bench/results/<name>.json, tables on stdout. Arguments select benchmarks (default: all), e.g.
#   bench/run-all.sh small-writes history-100k
# Environment: BENCH_TMP (scratch dir, default /work/bench-tmp; must be on the disk you want measured),
# BENCH_ROUNDS (default 3), BENCH_ONLY (variant filter), BENCH_SKIP_HTTP=1, BENCH_KEEP=1.
set -euo pipefail
repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd -P)"
# scripts/env.sh brings Node 24, the dependencies and the native chunker when missing (a warm start
# costs a few stat calls).
# shellcheck source=../scripts/env.sh
source "$repo/scripts/env.sh" || exit 1
cd "$repo"
# tsc emits even when some file does not typecheck: a type error in code the benchmarks do not load
# (work in progress elsewhere in the tree) must not stop them. A missing output does.
if ! npx tsc -p tsconfig.json; then
  echo "run-all: tsc reported errors (above); running the benchmarks with what it emitted" >&2
fi
for f in dist/bench/run.js dist/cli/main.js dist/engine/index.js; do
  [ -f "$f" ] || { echo "run-all: $f was not built" >&2; exit 1; }
done
exec node dist/bench/run.js "$@"
