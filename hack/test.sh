#!/usr/bin/env bash
# Runs every test of skiff: the main module, then the separate bench/ module.
#
# As root it first makes sure the machine provides what the integration tests
# need, so that under CI=true nothing skips: a running PostgreSQL (installed
# with apt-get on a fresh Debian machine, started if it is stopped) and a
# throw-away database for this run, dropped again at exit, whose URL is
# exported as SKIFF_TEST_POSTGRES_DSN. Set SKIFF_TEST_POSTGRES_DSN yourself to
# use another server instead. Running it again is safe.
#
# Extra arguments go to every `go test`, e.g. hack/test.sh -race -run Watch.
#
# Afterwards the request-decoding fuzz targets run briefly (SKIFF_FUZZTIME
# each, as go test's -fuzztime; default 50000x, about 15 s here; 0 skips
# them): their seeds already ran as unit tests, this looks a little further
# for panics and 5xx answers to bad bodies. The default is a count, not a
# duration: with a duration Go 1.26's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" when the time runs out while a
# worker is busy (golang/go#75804, fixed in Go 1.27), which CI hit once.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "hack/test.sh: $*" >&2; }
die() { say "$*"; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }

if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
	PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null || die "go is not on PATH; skiff needs Go $(awk '/^go /{print $2}' go.mod)"

PG_PORT=5432
# With trust authentication (as on the CI machines) the postgres role needs no
# password over TCP; otherwise a password-protected test role is made.
PG_SUPERUSER_URL="postgres://postgres@127.0.0.1:${PG_PORT}/postgres?sslmode=disable"
PG_TEST_ROLE=skiff_test
PG_TEST_PASSWORD=skiff_test

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# ensure_postgres installs PostgreSQL if it is missing and starts the local
# cluster on $PG_PORT if it is not accepting connections. Root only.
ensure_postgres() {
	if ! command -v pg_isready >/dev/null || ! command -v pg_ctlcluster >/dev/null; then
		say "installing PostgreSQL"
		apt_install postgresql
	fi
	if pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
		return
	fi
	local cluster
	cluster=$(pg_lsclusters --no-header | awk -v port="$PG_PORT" '$3 == port {print $1, $2; exit}')
	if [ -z "$cluster" ]; then
		local version
		version=$(basename "$(printf '%s\n' /usr/lib/postgresql/* | sort -V | tail -n 1)")
		say "creating PostgreSQL $version cluster main on port $PG_PORT"
		pg_createcluster --port "$PG_PORT" "$version" main
		cluster="$version main"
	fi
	say "starting PostgreSQL cluster $cluster"
	# Containers have no systemd; start the cluster directly.
	# shellcheck disable=SC2086
	pg_ctlcluster --skip-systemctl-redirect $cluster start || true
	for _ in $(seq 60); do
		pg_isready -q -h 127.0.0.1 -p "$PG_PORT" && return
		sleep 0.5
	done
	die "PostgreSQL did not start on 127.0.0.1:$PG_PORT; see /var/log/postgresql/"
}

# admin_psql runs psql as the postgres superuser: over TCP when that needs no
# password, else (as root) through the local socket as the postgres OS user.
admin_psql() {
	if [ "$PG_ADMIN" = tcp ]; then
		psql -X -q -w -v ON_ERROR_STOP=1 "$PG_SUPERUSER_URL" "$@"
	else
		(cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" -d postgres "$@")
	fi
}

TEST_DB=""
# shellcheck disable=SC2317 # called by the EXIT trap
drop_test_database() {
	if [ -n "$TEST_DB" ]; then
		admin_psql -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null ||
			say "could not drop database $TEST_DB"
	fi
}

# setup_test_database creates this run's database and exports its URL.
# It returns non-zero when no PostgreSQL superuser access is available.
setup_test_database() {
	if command -v psql >/dev/null && PGCONNECT_TIMEOUT=5 psql -X -q -w -At "$PG_SUPERUSER_URL" -c 'SELECT 1' >/dev/null 2>&1; then
		PG_ADMIN=tcp
	elif is_root && command -v psql >/dev/null; then
		PG_ADMIN=socket
	else
		return 1
	fi
	local owner=postgres url_user=postgres
	if [ "$PG_ADMIN" = socket ]; then
		# TCP logins need a password here: use a test role that has one.
		admin_psql -c "DO \$\$ BEGIN
			IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PG_TEST_ROLE') THEN
				CREATE ROLE $PG_TEST_ROLE LOGIN CREATEDB;
			END IF;
			ALTER ROLE $PG_TEST_ROLE PASSWORD '$PG_TEST_PASSWORD';
		END \$\$"
		owner=$PG_TEST_ROLE
		url_user="$PG_TEST_ROLE:$PG_TEST_PASSWORD"
	fi
	TEST_DB="skiff_test_$(date +%s)_$$"
	trap drop_test_database EXIT
	trap 'exit 130' INT TERM
	admin_psql -c "CREATE DATABASE $TEST_DB OWNER $owner" >/dev/null
	export SKIFF_TEST_POSTGRES_DSN="postgres://${url_user}@127.0.0.1:${PG_PORT}/${TEST_DB}?sslmode=disable"
	say "PostgreSQL tests use database $TEST_DB (dropped at exit)"
}

if [ -z "${SKIFF_TEST_POSTGRES_DSN:-}" ]; then
	if is_root; then
		ensure_postgres
	fi
	if ! setup_test_database; then
		if [ "${CI:-}" = true ]; then
			die "CI=true but no PostgreSQL is available: run as root, or set SKIFF_TEST_POSTGRES_DSN"
		fi
		say "no PostgreSQL available (run as root or set SKIFF_TEST_POSTGRES_DSN): PostgreSQL tests will skip"
	fi
else
	say "PostgreSQL tests use SKIFF_TEST_POSTGRES_DSN from the environment"
fi

if is_root; then
	# containerd, runc, nftables and ip_forward for the node agent tests.
	hack/install-node-deps.sh
fi

status=0
say "go test ./... (module $(go list -m))"
go test -count=1 -timeout 45m "$@" ./... || status=1
if [ -f bench/go.mod ]; then
	# kine is built once here (minutes on a fresh machine): bench/kineproc
	# and bench/suite, run side by side, would each build it otherwise.
	say "building kine for the storage benchmark's tests"
	if kine_bin=$(cd bench && go run ./cmd/storebench -build-kine); then
		export SKIFF_BENCH_KINE="$kine_bin"
	else
		say "could not build kine; the tests that need it will say why"
	fi
	say "go test ./... in bench/"
	(cd bench && go test -count=1 -timeout 45m "$@" ./...) || status=1
fi
FUZZTIME=${SKIFF_FUZZTIME:-50000x}
if [ "$FUZZTIME" != 0 ]; then
	for target in FuzzDecodeWrite FuzzDecodePatch; do
		say "fuzzing $target for $FUZZTIME"
		# One target per run is all go test -fuzz allows.
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" ./apiserver/endpoints || status=1
	done
fi
if [ "$status" -ne 0 ]; then
	say "FAIL"
else
	say "all tests passed"
fi
exit "$status"
