#!/usr/bin/env bash
# `npm test`: everything the suites need, then the type check and every suite.
#  - Debian packages: chromium (browser tests), bubblewrap (the recovery sandbox), spin and gcc (the
#    model checks of models/, tests/models.spec.ts), mariadb-server (the
#    MySQL driver). Installed with apt-get when missing and this runs as root (CI, a fresh machine);
#    otherwise the script says what is missing and the tests that need it fail or skip with that reason.
#  - A throwaway MariaDB on loopback for the MySQL tests, unless TASKWARD_TEST_MYSQL is already set.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v spin >/dev/null 2>&1 || missing+=(spin)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v mysqld >/dev/null 2>&1 || missing+=(mariadb-server)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing test prerequisites: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  else
    echo "Missing test prerequisites (install them as root, e.g. apt-get install ${missing[*]}): ${missing[*]}" >&2
  fi
fi

if [ -z "${TASKWARD_TEST_MYSQL:-}" ] && command -v mysqld_safe >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  if ! mysqladmin ping --silent >/dev/null 2>&1; then
    (mysqld_safe --bind-address=127.0.0.1 > /tmp/taskward-test-mysqld.log 2>&1 &)
    for _ in $(seq 1 60); do mysqladmin ping --silent >/dev/null 2>&1 && break; sleep 1; done
  fi
  mysql -uroot <<'SQL'
DROP DATABASE IF EXISTS taskward_test;
CREATE DATABASE taskward_test;
CREATE USER IF NOT EXISTS 'taskward_test'@'127.0.0.1' IDENTIFIED BY 'taskward_test';
GRANT ALL ON taskward_test.* TO 'taskward_test'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL
  export TASKWARD_TEST_MYSQL=mysql://taskward_test:taskward_test@127.0.0.1:3306/taskward_test
fi

npm run typecheck
# The real DSH host (tests/dsh): Node 24 + DSH 0.1.0-rc.8 in a cache outside the checkout, installed
# once (10-20 min here; scripts/dsh/install.mjs checks a cached one before reuse). In CI it is installed
# when missing, so those tests run rather than skip; elsewhere they skip and say how to install it.
if [ -n "${CI:-}" ]; then node scripts/dsh/install.mjs; fi
# The packed packages as a user installs them from the registry: pack, install into a scratch project,
# boot with the plain cordis CLI, import as ESM and CJS, type-check a consumer under nodenext.
export TASKWARD_TEST_PACKAGING="${TASKWARD_TEST_PACKAGING:-1}"

# The suites run on the machine's own Node, then once more on each Node release named by
# TASKWARD_TEST_NODE (space-separated, from the pinned list in scripts/test-node.mjs; `none` for no
# second run). CI defaults it to the Node 24 DSH runs on; elsewhere there is no second run unless asked.
# Each release is installed (checked against its pinned integrity) before the first run starts, so a
# failed download fails at once, not after the first run's 20 minutes.
if [ -n "${TASKWARD_TEST_NODE+set}" ]; then second="$TASKWARD_TEST_NODE"
elif [ -n "${CI:-}" ]; then second="$(node -e "import('./scripts/test-node.mjs').then((m) => console.log(m.DEFAULT_NODE))")"
else second=""; fi
[ "$second" = none ] && second=""
bins=()
for version in $second; do bins+=("$(node scripts/test-node.mjs "$version" | tail -n 1)"); done

suites=('packages/*/tests/**/*.spec.ts' 'plugins/*/tests/**/*.spec.ts' 'adapters/*/tests/**/*.spec.ts' 'examples/*/tests/**/*.spec.ts' 'tests/**/*.spec.ts')
# One run on whichever `node` is first on PATH (npx, mocha and every child the suites start by name or
# by process.execPath then run on it). --exit: every suite disposes its hosts, but a handle a future
# test forgets must fail loudly in review, not hang CI until its time limit.
run_suites() {
  echo "== npm test: the suites on Node $(node --version) ($(command -v node)) =="
  local started=$SECONDS
  local status=0
  npx mocha --exit "${suites[@]}" "$@" || status=$?
  echo "== npm test: Node $(node --version): $([ $status = 0 ] && echo passed || echo "FAILED (exit $status)") in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s =="
  return $status
}

results=()
failed=0
if run_suites "$@"; then results+=("Node $(node --version): passed"); else results+=("Node $(node --version): FAILED"); failed=1; fi
for bin in "${bins[@]}"; do
  if [ "$("$bin/node" --version)" = "$(node --version)" ]; then
    results+=("Node $(node --version) ($bin): not run again, it is the machine's own"); continue
  fi
  if PATH="$bin:$PATH" run_suites "$@"; then results+=("Node $("$bin/node" --version) ($bin): passed")
  else results+=("Node $("$bin/node" --version) ($bin): FAILED"); failed=1; fi
done
# Every run is reported, and a failure in any of them fails `npm test` (and with it CI).
printf '== npm test: %s ==\n' "${results[@]}"
exit $failed
