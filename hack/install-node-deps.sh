#!/usr/bin/env bash
# Makes this machine able to run skiff's node agent and its integration tests:
# containerd and runc (the container runtime the agent drives through its Go
# client), nftables and iproute2 (service proxy and debugging), a containerd
# daemon answering on its socket, and IPv4 forwarding (pods on the node
# bridge reach other networks only when the kernel forwards).
#
# Root only. Running it again is safe: it installs only what is missing and
# starts containerd only when its socket does not answer.
#
# Environment:
#   CONTAINERD_SOCKET  socket to check (default /run/containerd/containerd.sock)
#   CONTAINERD_LOG     where a containerd started here writes (default /var/log/skiff-containerd.log)
set -euo pipefail

say() { echo "hack/install-node-deps.sh: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (installs packages, starts containerd, sets sysctls)"

SOCKET=${CONTAINERD_SOCKET:-/run/containerd/containerd.sock}
LOG=${CONTAINERD_LOG:-/var/log/skiff-containerd.log}

missing=()
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
command -v nft >/dev/null || missing+=(nftables)
command -v ip >/dev/null || missing+=(iproute2)
if [ "${#missing[@]}" -gt 0 ]; then
	say "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# answering reports whether a containerd daemon serves the socket; ctr ships
# with the containerd package and a version call is the cheapest round trip.
answering() {
	[ -S "$SOCKET" ] && timeout 5 ctr --address "$SOCKET" version >/dev/null 2>&1
}

if ! answering; then
	say "starting containerd (log: $LOG)"
	# setsid detaches it from this script's process group so that an
	# interrupted test run does not take the daemon down with it.
	setsid containerd --address "$SOCKET" >>"$LOG" 2>&1 </dev/null &
	for _ in $(seq 1 60); do
		answering && break
		sleep 0.5
	done
	answering || die "containerd did not answer on $SOCKET within 30s; see $LOG"
fi

if [ "$(sysctl -n net.ipv4.ip_forward)" != 1 ]; then
	say "enabling net.ipv4.ip_forward"
	sysctl -qw net.ipv4.ip_forward=1
fi

say "ready: containerd on $SOCKET, runc $(runc --version | awk 'NR==1{print $3}'), ip_forward on"
