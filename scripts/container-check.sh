#!/usr/bin/env bash
# Builds the Docker image with podman and checks that it works, without a container runtime or registry.
#
#   sudo scripts/container-check.sh            # as root, from anywhere in the repository
#
# Needs: root, podman, and (only while no node:20-bookworm-slim image is stored locally) debootstrap.
#
# 1. Base image. When podman has no node:20-bookworm-slim image, a stand-in is made: a Debian bookworm
#    minbase root (debootstrap, from the mirror this machine's apt uses) without docs, man pages and
#    locales, as Debian's slim images are; this machine's Node 20 (binary, headers, npm) in the official
#    image's layout (/usr/local/bin/node, /usr/local/include/node, /usr/local/lib/node_modules/npm); a
#    `node` user and group with uid/gid 1000; this machine's CA bundle, apt sources and npm settings
#    (registry, cafile; and npm_config_nodedir=/usr/local in the environment, so that node-gyp finds the
#    headers instead of downloading them) so that `apt-get` and `npm ci` work inside the build. The
#    stand-in's environment is inherited by the image (npm then warns about "nodedir" in it).
#    It is imported as docker.io/library/node:20-bookworm-slim with the label livegoods.stand-in=1, once:
#    later runs reuse it (`podman rmi node:20-bookworm-slim` makes the next run build it again).
# 2. `podman build --isolation=chroot --pull=never --format docker` of the repository's Dockerfile, tagged
#    $IMAGE (default livegoods:check). Docker format keeps the HEALTHCHECK.
# 3. `podman run` does not work on the machines this was written for, so the image is run by hand: a
#    container is created and its filesystem mounted (`podman create` + `podman mount`), /proc and /dev
#    are bound into it and a fresh temporary directory becomes /data; commands run there with chroot as
#    the image's user (uid 1000), with the image's environment and working directory, PORT set to a
#    free loopback port. No network namespace: the service listens on this machine's 127.0.0.1.
#
# Checks, one PASS/FAIL line each: the image's CMD starts the service; /health and /health/ready answer
# 200; the image's HEALTHCHECK command succeeds; `npm ls --omit=dev` is complete and neither typescript
# nor ts-node is in node_modules; the README's admin CLI (`npm run -s admin -- customer create ...` and
# `node dist/cli/admin.js customer create ...`) prints the customer as JSON; `npm start` serves; the
# image holds no src/; the SQLite database lands in DATA_DIR (/data), owned by the image's user.
#
# Exit status: 0 all checks passed, 1 a check failed, 2 the check could not run (not root, no podman,
# base or image build failed, ...). Everything (an interrupted build's working containers too) is cleaned
# up on exit, on SIGINT and on SIGTERM; a run killed with SIGKILL leaves processes, mounts, a container
# or a temporary directory behind, and the next run removes them first. Untagged images of earlier
# builds stay (they are the build cache): `podman image prune` removes them. One run at a time (a
# lock; a second run waits up to 30 minutes).
#
# Settings (environment): IMAGE (tag to build, default livegoods:check), KEEP_IMAGE=0 to remove the
# built image at the end (default: keep it, so the next build is cached), BUILD_LOG (default: a file in
# the temporary directory, printed on failure).
set -uo pipefail

IMAGE="${IMAGE:-livegoods:check}"
BASE=node:20-bookworm-slim
BASE_REF=docker.io/library/node:20-bookworm-slim
NAME=livegoods-container-check          # the container this script creates (fixed: a later run finds it)
STATE=/run/livegoods-container-check    # records what a run set up, for a later run to clear
LOCK=/run/lock/livegoods-container-check.lock

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
failures=0
TMP=""
ROOT=""
child="" # a long step run in the background, so that SIGTERM is handled at once, not after it

# bg_wait command...: runs it in the background and waits (a trap interrupts `wait`, not a foreground job).
bg_wait() {
  "$@" 9>&- &
  child=$!
  wait "$child"
  local status=$?
  child=""
  return "$status"
}

say() { printf '%s\n' "$*"; }
note() { printf '  %s\n' "$*"; }
cannot() { say "CANNOT RUN: $*" >&2; exit 2; }
checks=0
pass() { say "PASS $*"; checks=$((checks + 1)); }
fail() { say "FAIL $*"; checks=$((checks + 1)); failures=$((failures + 1)); }

# ---- clean-up (this run's, and whatever a killed run left) ------------------------------------------
kill_rooted_in() { # processes whose root directory is $1 (they were started with chroot into it)
  local root="$1" pid r round
  [ -n "$root" ] || return 0
  for round in TERM TERM KILL; do
    local found=0
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
      r="$(readlink "/proc/$pid/root" 2>/dev/null)" || continue
      if [ "$r" = "$root" ]; then kill "-$round" "$pid" 2>/dev/null && found=1; fi
    done
    [ "$found" = 1 ] || return 0
    sleep 2
  done
}

unmount_under() { # every mount point at or below $1, deepest first
  local root="$1" m
  [ -n "$root" ] || return 0
  for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}

clear_state() {
  local root="" tmp=""
  [ -f "$STATE/root" ] && root="$(cat "$STATE/root")"
  [ -f "$STATE/tmp" ] && tmp="$(cat "$STATE/tmp")"
  if [ -z "$root" ] && podman container exists "$NAME" 2>/dev/null; then
    root="$(podman mount "$NAME" 2>/dev/null)" || root=""
  fi
  kill_rooted_in "$root"
  unmount_under "$root"
  if podman container exists "$NAME" 2>/dev/null; then
    podman umount "$NAME" >/dev/null 2>&1 || true
    podman rm -f "$NAME" >/dev/null 2>&1 || true
  fi
  if [ -f "$STATE/before-build" ]; then # an interrupted build leaves its buildah working containers
    podman ps -a --external --format '{{.ID}} {{.Names}}' 2>/dev/null | while read -r id cname; do
      case "$cname" in *-working-container) ;; *) continue ;; esac
      grep -qx "$id" "$STATE/before-build" || podman rm -f "$id" >/dev/null 2>&1 || true
    done
  fi
  if [ -n "$tmp" ] && [ -d "$tmp" ]; then
    kill_rooted_in "$tmp/rootfs"
    unmount_under "$tmp"
    rm -rf --one-file-system "$tmp"
  fi
  rm -rf "$STATE"
}

descendants() { # pid: its children, theirs, and so on
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$child" ]; then # the whole tree: a RUN step of an interrupted build outlives podman otherwise
    local tree
    tree="$(descendants "$child")"
    kill -TERM "$child" $tree 2>/dev/null; wait "$child" 2>/dev/null
    sleep 1; kill -KILL $tree 2>/dev/null
  fi
  clear_state
  if [ "${KEEP_IMAGE:-1}" = 0 ]; then podman rmi -f "$IMAGE" >/dev/null 2>&1 || true; fi
  exit "$status"
}

# ---- preconditions ---------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || cannot "must run as root (podman build --isolation=chroot, mounts, chroot)"
command -v podman >/dev/null || cannot "podman is not installed (apt-get install podman)"
for tool in chroot curl flock mount umount awk ps node; do command -v "$tool" >/dev/null || cannot "$tool is missing"; done
[ -f "$REPO/Dockerfile" ] || cannot "no Dockerfile in $REPO"

mkdir -p "$(dirname "$LOCK")"
exec 9>"$LOCK"
flock -w 1800 9 || cannot "another container check is still running (lock $LOCK)"

clear_state # what a SIGKILLed run left behind
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

TMP="$(mktemp -d /tmp/livegoods-container-check.XXXXXX)" || cannot "mktemp failed"
mkdir -p "$STATE" && printf '%s\n' "$TMP" > "$STATE/tmp"
BUILD_LOG="${BUILD_LOG:-$TMP/build.log}"

# ---- 1. base image ---------------------------------------------------------------------------------
make_base() {
  command -v debootstrap >/dev/null || cannot "no local $BASE image and debootstrap is not installed (apt-get install debootstrap)"
  local node npm_dir headers mirror rootfs="$TMP/rootfs" started=$SECONDS
  node="$(readlink -f "$(command -v node)")" || cannot "node is not installed on this machine"
  "$node" -e 'process.exit(process.versions.node.split(".")[0] === "20" ? 0 : 1)' \
    || cannot "this machine's node is $("$node" -v), the stand-in needs Node 20"
  npm_dir="$(readlink -f "$(dirname "$(readlink -f "$(command -v npm)")")/..")"
  [ -f "$npm_dir/package.json" ] || cannot "npm's directory not found (from $(command -v npm))"
  headers="$(dirname "$(dirname "$node")")/include/node"
  [ -f "$headers/node.h" ] || headers=/usr/local/include/node
  [ -f "$headers/node.h" ] || cannot "Node's headers (include/node/node.h) not found next to $node"
  mirror="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null | awk '$2 == "bookworm" { print $1; exit }')"
  [ -n "$mirror" ] || cannot "no Debian bookworm mirror in this machine's apt sources (run apt-get update?)"

  say "building a stand-in $BASE with debootstrap (bookworm minbase from $mirror) and this machine's Node $("$node" -v)"
  mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
  # As Debian's slim images: no docs, man pages or locales, now or from later apt-get installs.
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  bg_wait debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$TMP/debootstrap.log" 2>&1 || {
    tail -20 "$TMP/debootstrap.log" >&2; cannot "debootstrap failed (log above)"; }
  # debootstrap unpacks its first packages before dpkg reads the excludes: remove what they left.
  find "$rootfs/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null
  rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,linda}/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null

  # Node in the official image's layout.
  install -D -m 0755 "$node" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/include" "$rootfs/usr/local/lib/node_modules" "$rootfs/usr/local/etc"
  cp -a "$headers" "$rootfs/usr/local/include/node"
  cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  chroot "$rootfs" groupadd --gid 1000 node || cannot "groupadd node failed"
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node || cannot "useradd node failed"

  # What apt, npm and node-gyp need to reach this machine's package sources from inside the build.
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  fi
  rm -f "$rootfs/etc/apt/sources.list"
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list "$rootfs/etc/apt/sources.list.d/" 2>/dev/null
  apt-config dump 2>/dev/null | grep -iE '^Acquire::(https?::Proxy|Check-Valid-Until|Check-Date) ' \
    > "$rootfs/etc/apt/apt.conf.d/90host" || rm -f "$rootfs/etc/apt/apt.conf.d/90host"
  {
    printf 'registry=%s\n' "$(npm config get registry 2>/dev/null)"
    [ -f "$rootfs/etc/ssl/certs/ca-certificates.crt" ] && printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n'
    for key in proxy https-proxy noproxy; do
      v="$(npm config get "$key" 2>/dev/null)"
      case "$v" in ''|null|undefined) ;; *) printf '%s=%s\n' "$key" "$v" ;; esac
    done
  } > "$rootfs/usr/local/etc/npmrc"

  bg_wait import_rootfs "$rootfs" "$node" > "$TMP/import.log" 2>&1 || {
    cat "$TMP/import.log" >&2; cannot "podman import failed"; }
  rm -rf --one-file-system "$rootfs"
  note "stand-in base image ready in $((SECONDS - started)) s"
}

import_rootfs() { # rootfs, node
  tar --numeric-owner -C "$1" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$("$2" -p process.versions.node)" \
    --change 'ENV npm_config_nodedir=/usr/local' \
    --change 'LABEL livegoods.stand-in=1' \
    --change 'CMD ["node"]' - "$BASE_REF"
}

if podman image exists "$BASE"; then
  if [ "$(podman image inspect --format '{{index .Labels "livegoods.stand-in"}}' "$BASE" 2>/dev/null)" = 1 ]; then
    say "base: $BASE (the stand-in a previous run built)"
  else
    say "base: $BASE (stored locally)"
  fi
else
  make_base
fi

# ---- 2. build --------------------------------------------------------------------------------------
say "building $IMAGE from $REPO (podman build --isolation=chroot --pull=never --format docker; log: $BUILD_LOG)"
started=$SECONDS
podman ps -a --external --format '{{.ID}}' > "$STATE/before-build" 2>/dev/null
if ! bg_wait podman build --isolation=chroot --pull=never --format docker -t "$IMAGE" "$REPO" > "$BUILD_LOG" 2>&1; then
  tail -40 "$BUILD_LOG" >&2
  cannot "the image did not build (log above, whole log in $BUILD_LOG)"
fi
rm -f "$STATE/before-build"
note "built in $((SECONDS - started)) s; size $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }')"

# ---- 3. run it by hand -----------------------------------------------------------------------------
podman create --name "$NAME" "$IMAGE" > /dev/null || cannot "podman create failed"
ROOT="$(podman mount "$NAME")" || cannot "podman mount failed"
printf '%s\n' "$ROOT" > "$STATE/root"
mkdir -p "$TMP/data" "$ROOT/proc" "$ROOT/dev" "$ROOT/data"
mount --rbind /dev "$ROOT/dev" && mount --make-rslave "$ROOT/dev" || cannot "cannot bind /dev"
mount -t proc proc "$ROOT/proc" || cannot "cannot mount /proc"
mount --bind "$TMP/data" "$ROOT/data" || cannot "cannot bind /data"

# The image's config: user, working directory, environment, CMD and HEALTHCHECK.
podman image inspect "$IMAGE" > "$TMP/inspect.json" || cannot "podman image inspect failed"
node_js() { node -e "$1" "$TMP/inspect.json"; } # runs on this machine, reads the inspect output
IMG_USER="$(node_js 'const c=require(process.argv[1])[0].Config; process.stdout.write(c.User||"root")')"
IMG_WORKDIR="$(node_js 'const c=require(process.argv[1])[0].Config; process.stdout.write(c.WorkingDir||"/")')"
mapfile -t IMG_ENV < <(node_js 'const c=require(process.argv[1])[0].Config; for (const e of c.Env||[]) console.log(e)')
mapfile -t IMG_CMD < <(node_js 'const c=require(process.argv[1])[0].Config; for (const a of [...(c.Entrypoint||[]), ...(c.Cmd||[])]) console.log(a)')
HEALTH="$(node_js 'const i=require(process.argv[1])[0], h=(i.Healthcheck||i.Config.Healthcheck||{}).Test||[];
  if (h[0]==="CMD-SHELL") process.stdout.write(h[1]); else if (h[0]==="CMD") process.stdout.write(h.slice(1).map(a=>JSON.stringify(a)).join(" "))')"
DATA_DIR_IN_IMAGE="$(printf '%s\n' "${IMG_ENV[@]}" | sed -n 's/^DATA_DIR=//p')"
uid="$(chroot "$ROOT" id -u "$IMG_USER")" || cannot "user $IMG_USER not in the image"
gid="$(chroot "$ROOT" id -g "$IMG_USER")"
home="$(chroot "$ROOT" getent passwd "$IMG_USER" | cut -d: -f6)"
chown "$uid:$gid" "$TMP/data"
note "user $IMG_USER ($uid:$gid), workdir $IMG_WORKDIR, CMD ${IMG_CMD[*]}, DATA_DIR $DATA_DIR_IN_IMAGE"

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
PORT="$(free_port)"

# in_image [ENV=value ...] -- command...: runs it as the image's user in the image's environment. The
# command line is the chroot itself (no subshell), so `in_image ... &` gives the service's own pid, and
# the lock's descriptor is closed in it (a process left behind must not hold the lock).
in_image() {
  local extra=()
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do extra+=("$1"); shift; done
  shift
  chroot --userspec="$uid:$gid" "$ROOT" /usr/bin/env -i HOME="$home" "${IMG_ENV[@]}" PORT="$PORT" "${extra[@]}" \
    /bin/sh -c 'cd "$0" && exec "$@"' "$IMG_WORKDIR" "$@" 9>&-
}
# start_in_image log command...: the same in the background; sets $server to its pid.
start_in_image() {
  local log="$1"; shift
  chroot --userspec="$uid:$gid" "$ROOT" /usr/bin/env -i HOME="$home" "${IMG_ENV[@]}" PORT="$PORT" \
    /bin/sh -c 'cd "$0" && exec "$@"' "$IMG_WORKDIR" "$@" > "$log" 2>&1 9>&- &
  server=$!
}

wait_ready() { # pid, log: waits up to 60 s for /health/ready
  for _ in $(seq 1 120); do
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health/ready")" = 200 ] && return 0
    sleep 0.5
  done
  return 1
}

stop() { # pid: SIGTERM, as an orchestrator would; true when it exits 0 by itself within 30 s
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 1 60); do
    if ! kill -0 "$1" 2>/dev/null; then wait "$1" 2>/dev/null; return; fi
    sleep 0.5
  done
  kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 1
}

say "checks (service on 127.0.0.1:$PORT):"
start_in_image "$TMP/cmd.log" "${IMG_CMD[@]}"
if wait_ready "$server"; then
  pass "the image's CMD (${IMG_CMD[*]}) starts the service"
else
  fail "the image's CMD (${IMG_CMD[*]}) starts the service"; tail -20 "$TMP/cmd.log" | sed 's/^/    /'
fi
for path in /health /health/ready; do
  code="$(curl -s -o "$TMP/body" -w '%{http_code}' "http://127.0.0.1:$PORT$path")"
  if [ "$code" = 200 ]; then pass "GET $path answers 200"; else fail "GET $path answers 200 (got $code: $(head -c 200 "$TMP/body"))"; fi
done
if [ -z "$HEALTH" ]; then
  fail "the image has a HEALTHCHECK (none found: built without --format docker?)"
elif in_image -- /bin/sh -c "$HEALTH" > "$TMP/health.log" 2>&1; then
  pass "the image's HEALTHCHECK command succeeds"
else
  fail "the image's HEALTHCHECK command succeeds"; sed 's/^/    /' "$TMP/health.log"
fi

if in_image -- npm ls --omit=dev --all > "$TMP/npm-ls.log" 2>&1; then
  pass "npm ls --omit=dev: production dependencies complete"
else
  fail "npm ls --omit=dev: production dependencies complete"; grep -E 'ERR|missing|invalid' "$TMP/npm-ls.log" | head -10 | sed 's/^/    /'
fi
leftover="$(cd "$ROOT$IMG_WORKDIR" && find node_modules -type d \( -path '*node_modules/typescript' -o -path '*node_modules/ts-node' \) -prune 2>/dev/null)"
if [ -z "$leftover" ]; then pass "no typescript or ts-node in node_modules"; else fail "no typescript or ts-node in node_modules: $(echo $leftover)"; fi

json_customer() { # file, name: its last line is {"accessKey", "secretKey", "name": name, ...}
  node -e 'const fs=require("fs"); const lines=fs.readFileSync(process.argv[1],"utf8").trim().split("\n");
    const c=JSON.parse(lines[lines.length-1]);
    process.exit(c.accessKey && c.secretKey && c.name===process.argv[2] ? 0 : 1)' "$1" "$2" 2>/dev/null
}
if in_image -- npm run -s admin -- customer create --name "Check Shop" --currency KRW > "$TMP/admin-npm.log" 2>"$TMP/admin-npm.err" \
   && json_customer "$TMP/admin-npm.log" "Check Shop"; then
  pass "npm run -s admin -- customer create --name ... prints the customer JSON"
else
  fail "npm run -s admin -- customer create --name ... prints the customer JSON"; cat "$TMP/admin-npm.log" "$TMP/admin-npm.err" | tail -10 | sed 's/^/    /'
fi
if in_image -- npm run admin -- customer create --name "Check Shop 2" > "$TMP/admin-npm2.log" 2>"$TMP/admin-npm2.err" \
   && [ "$(wc -l < "$TMP/admin-npm2.log")" = 1 ] && json_customer "$TMP/admin-npm2.log" "Check Shop 2"; then
  pass "npm run admin -- customer create --name ... prints the customer JSON and nothing else on stdout"
else
  fail "npm run admin -- customer create --name ... prints the customer JSON and nothing else on stdout"; cat "$TMP/admin-npm2.log" "$TMP/admin-npm2.err" | tail -10 | sed 's/^/    /'
fi
if in_image -- node dist/cli/admin.js customer create --name "Check Shop 3" > "$TMP/admin-node.log" 2>&1 \
   && json_customer "$TMP/admin-node.log" "Check Shop 3"; then
  pass "node dist/cli/admin.js customer create --name ... prints the customer JSON"
else
  fail "node dist/cli/admin.js customer create --name ... prints the customer JSON"; tail -10 "$TMP/admin-node.log" | sed 's/^/    /'
fi

if stop "$server"; then pass "the service exits 0 on SIGTERM"; else fail "the service exits 0 on SIGTERM (status $?, or killed after 30 s)"; tail -5 "$TMP/cmd.log" | sed 's/^/    /'; fi

start_in_image "$TMP/npm-start.log" npm start
if wait_ready "$server" \
   && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health")" = 200 ]; then
  pass "npm start serves (/health and /health/ready 200)"
else
  fail "npm start serves (/health and /health/ready 200)"; tail -20 "$TMP/npm-start.log" | sed 's/^/    /'
fi
count="$(in_image -- node dist/cli/admin.js customer list 2>/dev/null | grep -c '"accessKey"')"
if [ "$count" = 3 ]; then pass "the customers outlive the restart (3 listed)"; else fail "the customers outlive the restart (listed: $count, expected 3)"; fi
# npm does not pass SIGTERM on to the service it started (it exits 143 and leaves the service running),
# which is why the image's CMD is node itself: stop whatever runs in the image.
kill_rooted_in "$ROOT"
wait "$server" 2>/dev/null

if [ -e "$ROOT$IMG_WORKDIR/src" ]; then fail "no src/ in the image ($IMG_WORKDIR/src exists)"; else pass "no src/ in the image"; fi
db="$TMP/data/livegoods.sqlite"
if [ -n "$DATA_DIR_IN_IMAGE" ] && [ -f "$db" ] && [ "$(stat -c %u "$db")" = "$uid" ] && [ ! -e "$ROOT$IMG_WORKDIR/data" ]; then
  pass "the database lands in DATA_DIR ($DATA_DIR_IN_IMAGE/livegoods.sqlite, owned by $IMG_USER)"
else
  fail "the database lands in DATA_DIR (DATA_DIR=${DATA_DIR_IN_IMAGE:-unset}; in it: $(ls "$TMP/data" | tr '\n' ' '))"
fi

if [ "$failures" -gt 0 ]; then say "container check: $failures of $checks checks failed"; exit 1; fi
say "container check: all $checks checks passed"
exit 0
