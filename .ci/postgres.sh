#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the store/postgres tests and sets
# TOOLGATE_POSTGRES_URL to a database on it.
#
# Sourced (what .ci/run does), it exports TOOLGATE_POSTGRES_URL and defines
# toolgate_postgres_stop, which stops the server and deletes its files:
#
#	. .ci/postgres.sh
#	trap toolgate_postgres_stop EXIT
#
# Run as a command, it prints the export line and how to stop the server:
#
#	eval "$(.ci/postgres.sh)"
#
# The server is a fresh cluster in a temporary directory, listening on a
# free port of 127.0.0.1 only, with password authentication. PostgreSQL is
# installed from the Debian packages when no initdb is found (that needs
# root). PostgreSQL refuses to run as root: as root, the server runs as the
# user postgres, created when missing. When TOOLGATE_POSTGRES_URL is already
# set, nothing is started.

toolgate_postgres_stop() {
	if [ -n "${TOOLGATE_PG_DIR:-}" ] && [ -d "$TOOLGATE_PG_DIR" ]; then
		_toolgate_pg_as "$TOOLGATE_PG_BIN/pg_ctl" stop -D "$TOOLGATE_PG_DIR/data" -m fast -w >/dev/null 2>&1 || true
		rm -rf "$TOOLGATE_PG_DIR"
	fi
	unset TOOLGATE_PG_DIR
}

# _toolgate_pg_as runs a command as the user that owns the cluster.
_toolgate_pg_as() {
	if [ -n "${TOOLGATE_PG_USER:-}" ]; then
		(cd / && runuser -u "$TOOLGATE_PG_USER" -- "$@")
	else
		"$@"
	fi
}

_toolgate_pg_start() {
	local bin initdb port pw i log
	initdb=$(ls -1d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$initdb" ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "postgres.sh: PostgreSQL is not installed, and installing it needs root" >&2
			return 1
		fi
		echo "postgres.sh: installing PostgreSQL" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || return 1
		initdb=$(ls -1d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)
		[ -n "$initdb" ] || { echo "postgres.sh: no initdb after installing PostgreSQL" >&2; return 1; }
	fi
	bin=$(dirname "$initdb")
	# Exported: the tests that start a server of their own use the same
	# installation (internal/pgtest.Cluster).
	TOOLGATE_PG_BIN=$bin
	export TOOLGATE_PG_BIN

	TOOLGATE_PG_USER=
	if [ "$(id -u)" = 0 ]; then
		TOOLGATE_PG_USER=postgres
		if ! id -u "$TOOLGATE_PG_USER" >/dev/null 2>&1; then
			useradd --system --no-create-home --shell /usr/sbin/nologin "$TOOLGATE_PG_USER" || return 1
		fi
	fi

	TOOLGATE_PG_DIR=$(mktemp -d /tmp/toolgate-pg.XXXXXX) || return 1
	pw=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	printf '%s\n' "$pw" >"$TOOLGATE_PG_DIR/pwfile"
	if [ -n "$TOOLGATE_PG_USER" ]; then
		chown -R "$TOOLGATE_PG_USER" "$TOOLGATE_PG_DIR" || return 1
	fi
	chmod 700 "$TOOLGATE_PG_DIR"
	_toolgate_pg_as "$bin/initdb" -D "$TOOLGATE_PG_DIR/data" -U toolgate --pwfile="$TOOLGATE_PG_DIR/pwfile" \
		--auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >"$TOOLGATE_PG_DIR/initdb.log" 2>&1 || {
		cat "$TOOLGATE_PG_DIR/initdb.log" >&2
		return 1
	}
	rm -f "$TOOLGATE_PG_DIR/pwfile"

	# A free port: try random ones until the server starts on one.
	log="$TOOLGATE_PG_DIR/server.log"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue # something listens there
		fi
		if _toolgate_pg_as "$bin/pg_ctl" start -D "$TOOLGATE_PG_DIR/data" -l "$log" -w -t 60 -o \
			"-c listen_addresses=127.0.0.1 -p $port -k $TOOLGATE_PG_DIR -c max_connections=200 -c fsync=off" >/dev/null; then
			break
		fi
		port=
	done
	if [ -z "$port" ]; then
		echo "postgres.sh: the server did not start; its log:" >&2
		cat "$log" >&2
		return 1
	fi
	for i in $(seq 1 60); do
		"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
		[ "$i" = 60 ] && { echo "postgres.sh: the server is not ready" >&2; return 1; }
		sleep 0.5
	done
	PGPASSWORD=$pw "$bin/psql" -q -h 127.0.0.1 -p "$port" -U toolgate -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE toolgate" >&2 || return 1
	TOOLGATE_POSTGRES_URL="postgres://toolgate:$pw@127.0.0.1:$port/toolgate?sslmode=disable"
	export TOOLGATE_POSTGRES_URL
	echo "postgres.sh: $("$bin/postgres" --version) on 127.0.0.1:$port, database toolgate" >&2
}

if [ -z "${TOOLGATE_POSTGRES_URL:-}" ]; then
	if ! _toolgate_pg_start; then
		toolgate_postgres_stop
		if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 1; else exit 1; fi
	fi
	if [ "${BASH_SOURCE[0]}" = "$0" ]; then
		echo "export TOOLGATE_POSTGRES_URL='$TOOLGATE_POSTGRES_URL'"
		echo "# stop it with: ${TOOLGATE_PG_USER:+runuser -u $TOOLGATE_PG_USER -- }$TOOLGATE_PG_BIN/pg_ctl stop -D $TOOLGATE_PG_DIR/data -m fast && rm -rf $TOOLGATE_PG_DIR"
	fi
else
	echo "postgres.sh: using the TOOLGATE_POSTGRES_URL already set" >&2
fi
