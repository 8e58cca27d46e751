#!/usr/bin/env bash
# Anteroom's two commands.
#
#   ./anteroom.sh run    set up what is missing, build, and serve (default http://127.0.0.1:8080;
#                        the server prints where it really listens), SQLite in ./data, the
#                        simulated cluster
#   ./anteroom.sh test   the whole suite: fmt, clippy, unit + integration + browser tests,
#                        store tests also on a throwaway PostgreSQL; installs what is missing
#                        (rustfmt, clippy, cargo-nextest, chromium, PostgreSQL, python3-venv,
#                        CJK fonts, npm and axe-core)
#   ./anteroom.sh bench-api   the jobs API under load against the release server
#   ./anteroom.sh bench-round the watcher's round at 10,000 and 100,000 waiting jobs, against
#                             the reference's query pattern (add --postgres URL for PostgreSQL;
#                             --no-reference skips the reference's minutes-long selector)
#
# Both install only what they need and are safe to run again. Nothing is downloaded from
# outside crates.io and Debian's archive, but for the tests' PyPI (schemathesis) and npm
# (axe-core) packages, each pinned.
set -euo pipefail

cd "$(dirname "$0")"
ROOT=$(pwd)
# A target directory outside the clone keeps warm builds warm across fresh clones.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/anteroom/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-auto}"
# Under CI: `CI` set to anything but empty, "false" or "0". The same rule as xtask's `in_ci`
# and the tests' `anteroom_tests::in_ci`; keep the three alike.
is_ci() {
  case "${CI:-}" in
    "" | false | 0) return 1 ;;
    *) return 0 ;;
  esac
}
LOCKED=()
if is_ci; then LOCKED=(--locked); fi

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root to run: $*"
  fi
}

ensure_rust() {
  command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust 1.95 (rustup) first"
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target (once)"
    rustup target add wasm32-unknown-unknown
  fi
}

APT_UPDATED=
apt_install() {
  if [ -z "$APT_UPDATED" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

# The newest installed PostgreSQL's bin directory (Debian keeps initdb off PATH), or nothing.
pg_bin() {
  local bin=""
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && bin="$d"; done
  if [ -z "$bin" ] && command -v initdb >/dev/null 2>&1; then bin=$(dirname "$(command -v initdb)"); fi
  printf '%s' "$bin"
}

# Everything the whole suite needs, installed when missing, so that on a fresh machine no test
# is skipped: the tests that need PostgreSQL or Chromium are #[ignore]d for plain `cargo
# nextest run` and run here with --run-ignored all.
ensure_test_tools() {
  local components
  components=$(rustup component list --installed 2>/dev/null || true)
  for c in rustfmt clippy; do
    if ! grep -q "^$c" <<<"$components"; then
      command -v rustup >/dev/null 2>&1 || die "the $c component is missing and rustup is not installed"
      say "adding the $c rustup component (once)"
      rustup component add "$c"
    fi
  done
  if ! command -v cargo-nextest >/dev/null 2>&1; then
    say "installing cargo-nextest (once)"
    cargo install cargo-nextest --locked
  fi
  local pkgs=()
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then pkgs+=(chromium chromium-driver); fi
  if [ -z "$(pg_bin)" ]; then pkgs+=(postgresql); fi
  # A real Prometheus scrapes a running Anteroom and answers every dashboard panel's query
  # (tests/tests/prometheus_dashboard.rs).
  if ! command -v prometheus >/dev/null 2>&1; then pkgs+=(prometheus); fi
  # schemathesis goes into a venv: Debian's python3 needs python3-venv (ensurepip) for that.
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    pkgs+=(python3 python3-venv)
  fi
  # Chinese, Japanese and Korean glyphs: without them headless Chromium draws the UI's zh/ja/ko
  # text as empty boxes, and screenshots of it show nothing to check.
  if ! dpkg -s fonts-noto-cjk >/dev/null 2>&1; then pkgs+=(fonts-noto-cjk); fi
  # npm (with Debian's nodejs) fetches axe-core below.
  if ! command -v npm >/dev/null 2>&1; then pkgs+=(npm); fi
  if [ "${#pkgs[@]}" -gt 0 ]; then
    say "installing Debian packages (once, a few minutes): ${pkgs[*]}"
    apt_install "${pkgs[@]}"
  fi
  command -v chattr >/dev/null 2>&1 || apt_install e2fsprogs
  ensure_axe_core
  ensure_binaryen
}

# axe-core (npm), the accessibility rules the browser tests run against the UI's pages
# (anteroom_tests::browser::Browser::axe_violations reads the file ANTEROOM_AXE_JS names). One
# exact version, so that a new rule upstream never fails a build that changed nothing; bump it
# on purpose (npm view axe-core version).
AXE_CORE_VERSION=4.14.1
ensure_axe_core() {
  local dir="$HOME/.cache/anteroom/axe-core"
  local pkg="$dir/node_modules/axe-core"
  if [ ! -s "$pkg/axe.min.js" ] || ! grep -q "\"version\": \"$AXE_CORE_VERSION\"" "$pkg/package.json" 2>/dev/null; then
    say "installing axe-core $AXE_CORE_VERSION into $dir (once)"
    mkdir -p "$dir"
    npm install --prefix "$dir" "axe-core@$AXE_CORE_VERSION" --save-exact --ignore-scripts \
      --no-audit --no-fund --loglevel=error >/dev/null
    [ -s "$pkg/axe.min.js" ] || die "npm did not install $pkg/axe.min.js"
  fi
  export ANTEROOM_AXE_JS="$pkg/axe.min.js"
}

# binaryen (npm) for `wasm-opt -Oz`, which shrinks the web UI's WASM by two thirds (xtask runs
# the one ANTEROOM_WASM_OPT names; Debian's binaryen is too old for the module). One exact
# version, like axe-core. Without npm the UI is served unoptimised, and works the same.
BINARYEN_VERSION=132.0.0
ensure_binaryen() {
  local dir="$HOME/.cache/anteroom/binaryen"
  local bin="$dir/node_modules/.bin/wasm-opt"
  if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$BINARYEN_VERSION\"" "$dir/node_modules/binaryen/package.json" 2>/dev/null; then
    if ! command -v npm >/dev/null 2>&1; then
      say "npm not found: the web UI is built without wasm-opt (larger download)"
      return 0
    fi
    say "installing binaryen $BINARYEN_VERSION (wasm-opt) into $dir (once)"
    mkdir -p "$dir"
    npm install --prefix "$dir" "binaryen@$BINARYEN_VERSION" --save-exact --ignore-scripts \
      --no-audit --no-fund --loglevel=error >/dev/null || { say "binaryen not installed: the UI stays unoptimised"; return 0; }
  fi
  [ -x "$bin" ] && export ANTEROOM_WASM_OPT="$bin"
  return 0
}

# schemathesis (PyPI) checks the running API against its own OpenAPI document: every documented
# operation, fuzzed and in sequences, must answer only documented statuses and shapes.
ensure_schemathesis() {
  local venv="$HOME/.cache/anteroom/venv"
  if [ ! -x "$venv/bin/schemathesis" ]; then
    say "installing schemathesis into $venv (once, ~1 min)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis>=4.32,<5"
  fi
  SCHEMATHESIS="$venv/bin/schemathesis"
}

# The Kubernetes versions deploy/ is validated against (README, "Running against a real cluster
# with Volcano"); the client is built against 1.33.
KUBERNETES_VERSIONS=(1.31.0 1.33.0 1.35.0)
# kubernetes-validate (PyPI): Kubernetes' own OpenAPI schemas, one exact version like the others.
KUBERNETES_VALIDATE_VERSION=1.37.0

# deploy/: the kustomize base and each overlay rendered by `kubectl kustomize` (Debian's
# kubernetes-client) and validated, strictly (an unknown field fails), against each version.
validate_deploy() {
  command -v kubectl >/dev/null 2>&1 || apt_install kubernetes-client
  local venv="$HOME/.cache/anteroom/venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  local installed
  installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null || true)
  if [ "$installed" != "$KUBERNETES_VALIDATE_VERSION" ]; then
    say "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $venv (once)"
    "$venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  fi
  local out
  out=$(mktemp -d /tmp/anteroom-deploy.XXXXXX)
  for dir in deploy/base deploy/overlays/*/; do
    dir=${dir%/}
    local file="$out/$(basename "$dir").yaml"
    kubectl kustomize "$ROOT/$dir" >"$file" || die "kubectl kustomize $dir failed"
    for v in "${KUBERNETES_VERSIONS[@]}"; do
      "$venv/bin/kubernetes-validate" --strict --quiet -k "$v" "$file" || die "$dir does not validate against Kubernetes $v"
    done
    say "  $dir: $(grep -c '^kind:' "$file") objects valid on Kubernetes ${KUBERNETES_VERSIONS[*]}"
  done
  rm -rf "$out"
}

run_api_contract_tests() {
  ensure_schemathesis
  cargo build "${LOCKED[@]}" -q -p anteroom
  local dir port pid
  dir=$(mktemp -d /tmp/anteroom-contract.XXXXXX)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  ANTEROOM_ADMIN_PASSWORD=contract-test-password ANTEROOM_LOG=warn \
    "$CARGO_TARGET_DIR/debug/anteroom" serve --data-dir "$dir" --listen "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
  pid=$!
  local token
  token=$(python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(200):
    try:
        urllib.request.urlopen(base + "/healthz", timeout=1)
        break
    except Exception:
        time.sleep(0.1)
req = urllib.request.Request(base + "/api/v1/auth/login", method="POST",
    data=json.dumps({"username": "admin", "password": "contract-test-password"}).encode(),
    headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=5))["token"])
PY
  ) || { kill "$pid"; cat "$dir/server.log"; die "the server for the contract tests did not start"; }
  local ok=0
  # Run from the temp dir: schemathesis keeps a cache folder in its working directory.
  (cd "$dir" && SCHEMATHESIS_TELEMETRY=false "$SCHEMATHESIS" --config-file "$ROOT/schemathesis.toml" \
    run "http://127.0.0.1:$port/api/openapi.json" \
    --url "http://127.0.0.1:$port" --checks all --max-examples 50 --seed 1 \
    --exclude-path /api/v1/auth/logout --exclude-path /api/v1/jobs/events/stream \
    -H "Authorization: Bearer $token" >"$dir/schemathesis.log" 2>&1) || ok=$?
  kill "$pid" 2>/dev/null || true
  if [ "$ok" -ne 0 ]; then cat "$dir/schemathesis.log"; die "API contract tests (schemathesis) failed"; fi
  grep -iE "generated|no issues found" "$dir/schemathesis.log" || true
  rm -rf "$dir"
}

# A throwaway PostgreSQL for the store tests: initdb into a temp dir, a free port, trust auth,
# fsync off. Stopped on exit, also on failure.
PG_DIR=
start_postgres() {
  local bin
  bin=$(pg_bin)
  [ -n "$bin" ] || die "PostgreSQL (initdb) is not installed and could not be installed (apt-get install postgresql)"
  PG_DIR=$(mktemp -d /tmp/anteroom-pg.XXXXXX)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local run=()
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$PG_DIR"; run=(runuser -u postgres --); fi
  say "starting a throwaway PostgreSQL on 127.0.0.1:$port"
  "${run[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log"; die "initdb failed"; }
  "${run[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
    -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start >/dev/null || { cat "$PG_DIR/server.log"; die "PostgreSQL did not start"; }
  PG_STOP=("${run[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -m immediate stop)
  export ANTEROOM_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port"
}
stop_postgres() {
  if [ -n "$PG_DIR" ]; then
    "${PG_STOP[@]}" >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}

cmd_run() {
  ensure_rust
  ensure_binaryen
  say "building Anteroom (the first build takes several minutes; later ones seconds)"
  cargo xtask build
  local data="${ANTEROOM_DATA_DIR:-$ROOT/data}"
  export ANTEROOM_DATA_DIR="$data"
  # The server creates the data directory (owner-only) and, on its first start, the first admin:
  # it prints a generated password and keeps it in $data/admin-password (owner-only). While that
  # file is there, show the password again.
  if [ -z "${ANTEROOM_ADMIN_PASSWORD:-}" ] && [ -z "${ANTEROOM_ADMIN_PASSWORD_FILE:-}" ] \
    && [ -s "$data/admin-password" ]; then
    say "log in as admin / $(cat "$data/admin-password")  (kept in $data/admin-password until the password is changed)"
  fi
  # The address comes from the server itself ("Anteroom is serving on http://…"): --listen,
  # ANTEROOM_LISTEN and anteroom.toml all count, so this script does not guess it.
  say "starting Anteroom (data: $data, cluster: ${ANTEROOM_CLUSTER:-sim})"
  exec "$CARGO_TARGET_DIR/release/anteroom" serve "$@"
}

cmd_test() {
  ensure_rust
  ensure_test_tools
  local t0=$SECONDS
  say "format"
  cargo fmt --all -- --check
  say "building the web UI (embedded into the server the tests start)"
  cargo xtask ui
  say "clippy (server side)"
  cargo clippy "${LOCKED[@]}" --all-targets -- -D warnings
  say "clippy (web UI, wasm32)"
  cargo clippy "${LOCKED[@]}" -p anteroom-web --target wasm32-unknown-unknown --profile wasm-release -- -D warnings
  say "rustdoc (broken intra-doc links fail)"
  RUSTDOCFLAGS="-D warnings" cargo doc "${LOCKED[@]}" -q --no-deps --document-private-items \
    -p anteroom -p anteroom-shared -p migration -p anteroom-tests -p anteroom-cli
  say "deployment manifests (kustomize base and overlays against the Kubernetes schemas)"
  validate_deploy
  trap stop_postgres EXIT
  start_postgres
  say "API contract tests (schemathesis against the running server's OpenAPI document)"
  run_api_contract_tests
  say "doc tests"
  cargo test "${LOCKED[@]}" --doc --workspace --exclude anteroom-web
  # PostgreSQL and Chromium are there (installed above, or the script stopped): run the tests
  # marked #[ignore = "needs PostgreSQL"] / "needs Chromium" too, so none is skipped.
  say "unit, integration, store (SQLite and PostgreSQL) and browser tests"
  cargo nextest run "${LOCKED[@]}" --workspace --no-fail-fast --run-ignored all
  say "all checks passed in $((SECONDS - t0)) s"
}

# The jobs API under load (docs/performance.md): the release server over real HTTP on SQLite.
# Arguments: [seconds per measurement, default 10] [concurrency, default 16].
cmd_bench_api() {
  ensure_rust
  say "building the release server and the load tool"
  cargo build "${LOCKED[@]}" --release -q -p anteroom -p anteroom-tests --bin anteroom --bin api-bench
  "$CARGO_TARGET_DIR/release/api-bench" "$CARGO_TARGET_DIR/release/anteroom" "$@"
}

cmd_bench_round() {
  ensure_rust
  say "building the round benchmark"
  cargo build "${LOCKED[@]}" --release -q -p anteroom-tests --bin round-bench
  "$CARGO_TARGET_DIR/release/round-bench" "$@"
}

case "${1:-}" in
  run) shift; cmd_run "$@" ;;
  test) shift; cmd_test "$@" ;;
  bench-api) shift; cmd_bench_api "$@" ;;
  bench-round) shift; cmd_bench_round "$@" ;;
  *) echo "usage: ./anteroom.sh run | test | bench-api [seconds] [concurrency] | bench-round [jobs...] [--postgres URL] [--no-reference]"; exit 2 ;;
esac
