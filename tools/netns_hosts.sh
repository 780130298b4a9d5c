#!/usr/bin/env bash
# Two emulated hosts on one Linux machine, for running dtrain across "machines" without any.
#
# Each host is a network namespace with its own loopback and one end of a veth pair; the pair is
# the only link between them (10.78.0.1 and 10.78.0.2 by default), optionally shaped by a token
# bucket (tc tbf) to a given rate. Open MPI starts its remote daemon through a launch agent (the
# `agent` mode of this script) that enters the host's namespace with `ip netns exec` where a
# real cluster would use ssh. Nothing is configured outside the namespaces, so no traffic leaves
# them, and deleting the namespaces removes everything (the veth ends go with them).
#
# usage:
#   netns_hosts.sh check                  exit 0 if namespaces can be made here, else 77 and why
#   netns_hosts.sh up [--rate R]          create the two hosts (R: a tc rate: 1gbit, 100mbit, ...)
#   netns_hosts.sh down                   delete them (also removes leftovers of a killed run)
#   netns_hosts.sh status                 namespaces, addresses and link shaping
#   netns_hosts.sh run [--rate R] [--per-host K] [--mpi-arg ARG]... -- PROGRAM ARGS...
#                                         up, then mpirun -np 2K PROGRAM across both hosts
#                                         (K ranks each), then down, whatever happens
#   netns_hosts.sh mpirun ...             mpirun inside host 1 with the agent and TCP settings
#                                         (hosts already up; arguments go to mpirun)
#   netns_hosts.sh agent [OPTS] HOST CMD  the launch agent Open MPI calls (plm_rsh_agent)
#
# Environment: NETNS_NAME (default dtrain; the hosts are NAME-h1 and NAME-h2, so concurrent users
# pick different names), NETNS_SUBNET (first three octets, default 10.78.0), NETNS_BURST (tbf
# bucket, default 256kb). Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2 and Open MPI.
set -euo pipefail

SELF=$(readlink -f "$0")
NAME=${NETNS_NAME:-dtrain}
SUBNET=${NETNS_SUBNET:-10.78.0}
BURST=${NETNS_BURST:-256kb}
H1=$NAME-h1
H2=$NAME-h2
IP1=$SUBNET.1
IP2=$SUBNET.2
# The launch agent runs in mpirun's environment: it must see the same names.
export NETNS_NAME=$NAME NETNS_SUBNET=$SUBNET

die() { echo "netns_hosts: $*" >&2; exit 1; }

# Host name or address -> namespace.
namespace_of() {
  case "$1" in
    "$IP1" | "$H1") echo "$H1" ;;
    "$IP2" | "$H2") echo "$H2" ;;
    *) return 1 ;;
  esac
}

cmd_check() {
  local why=""
  if [ "$(id -u)" != 0 ]; then
    why="not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
  elif ! command -v ip >/dev/null; then
    why="iproute2 ('ip') is not installed"
  elif ! command -v mpirun >/dev/null; then
    why="mpirun (openmpi-bin) is not installed"
  else
    local probe="$NAME-probe$$"
    if ! ip netns add "$probe" 2>/dev/null; then
      why="'ip netns add' failed (no namespace support or not permitted in this container)"
    else
      ip netns del "$probe"
    fi
  fi
  if [ -n "$why" ]; then
    echo "netns_hosts: cannot emulate hosts here: $why" >&2
    exit 77
  fi
}

cmd_down() {
  # Processes still inside (a daemon cut off from mpirun when the link went down, a rank stuck
  # in MPI_Abort) would keep the namespace alive after `ip netns del`: end them first, by pid.
  # Deleting a namespace then deletes the veth end inside it, and so its peer.
  for ns in "$H1" "$H2"; do
    if [ -e "/run/netns/$ns" ]; then
      local pids
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      if [ -n "$pids" ]; then
        kill -TERM $pids 2>/dev/null || true
        sleep 1
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [ -n "$pids" ]; then kill -KILL $pids 2>/dev/null || true; fi
      fi
      ip netns del "$ns"
    fi
  done
}

cmd_up() {
  local rate=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) rate=$2; shift 2 ;;
      *) die "up: unknown argument $1" ;;
    esac
  done
  cmd_check
  cmd_down
  ip netns add "$H1"
  ip netns add "$H2"
  # Created directly inside the namespaces: the root namespace never sees the pair.
  ip link add link0 netns "$H1" type veth peer name link0 netns "$H2"
  ip -n "$H1" addr add "$IP1/24" dev link0
  ip -n "$H2" addr add "$IP2/24" dev link0
  for ns in "$H1" "$H2"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set link0 up
    # Both directions are shaped, as on a full-duplex link of that speed. The bucket must hold
    # at least one 64 KiB GSO segment (veth hands TCP whole segments), or the rate falls short.
    if [ -n "$rate" ]; then
      ip netns exec "$ns" tc qdisc add dev link0 root tbf rate "$rate" burst "$BURST" latency 50ms
    fi
  done
}

cmd_status() {
  for ns in "$H1" "$H2"; do
    if [ -e "/run/netns/$ns" ]; then
      echo "$ns: $(ip -n "$ns" -4 -o addr show dev link0 | awk '{print $4}')" \
        "$(ip netns exec "$ns" tc qdisc show dev link0 | head -1)"
    else
      echo "$ns: absent"
    fi
  done
}

# Open MPI runs the agent as: AGENT [options...] HOST COMMAND WORDS...
cmd_agent() {
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
  [ $# -ge 2 ] || die "agent: expected HOST COMMAND"
  local ns
  ns=$(namespace_of "$1") || die "agent: $1 is not one of the emulated hosts ($IP1, $IP2)"
  shift
  exec ip netns exec "$ns" /bin/sh -c "$*"
}

# mpirun inside host 1, so that host 1 is the local node and the daemon it starts on host 2 can
# reach it over the link. TCP only between hosts, and only on the emulated link (out-of-band and
# data traffic). --bind-to none: each "node" would otherwise bind its first rank to core 0, and
# on one physical machine both ranks would then share that core.
cmd_mpirun() {
  local as_root=()
  [ "$(id -u)" = 0 ] && as_root=(--allow-run-as-root)
  exec ip netns exec "$H1" mpirun "${as_root[@]}" --oversubscribe --bind-to none \
    --mca plm_rsh_agent "$SELF agent" \
    --mca btl self,vader,tcp --mca btl_tcp_if_include "$SUBNET.0/24" --mca oob_tcp_if_include "$SUBNET.0/24" "$@"
}

cmd_run() {
  local rate="" per_host=1 mpi_args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) rate=$2; shift 2 ;;
      --per-host) per_host=$2; shift 2 ;;
      --mpi-arg) mpi_args+=("$2"); shift 2 ;;
      --) shift; break ;;
      *) die "run: unknown argument $1 (the program follows --)" ;;
    esac
  done
  [ $# -gt 0 ] || die "run: no program given (netns_hosts.sh run [options] -- PROGRAM ARGS)"
  trap cmd_down EXIT
  trap 'exit 130' INT TERM
  cmd_up ${rate:+--rate "$rate"}
  local status=0
  ( cmd_mpirun -np $((2 * per_host)) --host "$IP1:$per_host,$IP2:$per_host" "${mpi_args[@]}" "$@" ) || status=$?
  return $status
}

mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in
  check) cmd_check ;;
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  run) cmd_run "$@" ;;
  mpirun) cmd_mpirun "$@" ;;
  agent) cmd_agent "$@" ;;
  *) sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
