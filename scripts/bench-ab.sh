#!/usr/bin/env bash
# Alternating A/B runs of a benchmark: this checkout against another commit, on the same machine.
#
#   bash scripts/bench-ab.sh <ref> <rounds> <bench> [bench options...]
#   bash scripts/bench-ab.sh main~3 3 bench:excel --job-only --engines=mysql
#
# Checks <ref> out into a temporary git worktree (sharing this checkout's node_modules), builds both,
# then runs `npm run -s <bench> -- [options]` <rounds> times on each side, in turns; the side that goes
# first changes every round, so that a machine getting busier or quieter over the run weighs on both.
# Each output line is prefixed with the side and the round ("base r2:", "this r2:"). The two sides use
# their own MariaDB databases (BENCH_DB_PREFIX lgbase / lgthis). The worktree is removed on exit.
#
# On a shared machine the same code can differ by 20% or more between runs: compare the pairs of a
# round, take several rounds, and prefer the figures load disturbs least (server CPU time).
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
ref=$1
rounds=$2
bench=$3
shift 3
options=("$@")

here=$(cd "$(dirname "$0")/.." && pwd)
base_commit=$(git -C "$here" rev-parse --verify "$ref^{commit}")
worktree=$(mktemp -d "${TMPDIR:-/tmp}/livegoods-bench-base.XXXXXX")
cleanup() {
  git -C "$here" worktree remove --force "$worktree" >/dev/null 2>&1 || rm -rf "$worktree"
  git -C "$here" worktree prune >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "base: $ref ($(git -C "$here" log -1 --format='%h %s' "$base_commit"))"
echo "this: $(git -C "$here" log -1 --format='%h %s')$(git -C "$here" diff --quiet HEAD -- src bench || echo ' + uncommitted changes')"
git -C "$here" worktree add --detach "$worktree" "$base_commit" >/dev/null
ln -s "$here/node_modules" "$worktree/node_modules"
echo "building both sides"
(cd "$worktree" && npx nest build >/dev/null)
(cd "$here" && npx nest build >/dev/null)

run() {
  local side=$1 dir=$2 round=$3
  (cd "$dir" && BENCH_DB_PREFIX="lg$side" npm run -s "$bench" -- "${options[@]}" 2>&1) | sed "s/^/$side r$round: /"
}

for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then
    run base "$worktree" "$round"
    run this "$here" "$round"
  else
    run this "$here" "$round"
    run base "$worktree" "$round"
  fi
done
