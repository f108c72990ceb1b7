#!/usr/bin/env bash
# Installs the servers pushpull's tests and benchmark run: MariaDB,
# memcached and Redis, from Debian's packages, only when they are missing. pushpull
# starts private copies in temporary directories; the system services are
# neither configured nor left running.
set -euo pipefail

missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
have mariadbd || missing+=(mariadb-server)
have memcached || missing+=(memcached)
have redis-server || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || [ ! -f /etc/debian_version ]; then
	echo "pushpull needs: ${missing[*]}" >&2
	echo "Install them, e.g. on Debian or Ubuntu as root:" >&2
	echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 1
fi

echo "make deps: installing ${missing[*]}" >&2
# Keep the packages' post-install scripts from starting system services:
# pushpull runs its own servers, and nothing should be left running.
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod +x "$policy"
	made_policy=1
fi
cleanup() { if [ -n "$made_policy" ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
