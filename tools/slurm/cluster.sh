#!/usr/bin/env bash
# A single-node Slurm cluster for dtrain's tests and benchmarks, from Debian's packages
# (slurmctld, slurmd, slurm-client, munge), configured in a directory of its own: nothing in
# /etc/slurm is read or written. Daemons run as root without systemd and are stopped by the
# process ids in their pid files.
#
#   tools/slurm/cluster.sh start DIR   # writes DIR/slurm.conf, starts munged (if not running),
#                                      # slurmctld and slurmd; waits until the node is idle
#   tools/slurm/cluster.sh stop DIR
#   export SLURM_CONF=DIR/slurm.conf   # what clients (sbatch, srun, squeue, scontrol) read
#
# Partitions (docs/scheduling.md):
#   low   the default; jobs a `high` job preempts are requeued (PreemptMode=REQUEUE) after
#         SIGTERM and GraceTime seconds to checkpoint
#   high  preempts `low`
#   gang  time-sliced: up to two jobs share the CPUs, alternating every SchedulerTimeSlice
#         seconds (suspended with SIGSTOP, resumed with SIGCONT)
# AuthInfo=cred_expire=10 lets a requeued job start again after ~25 s instead of ~145 s.
# Never remove libmunge2: Debian's Open MPI depends on it through PMIx.
set -euo pipefail
action=${1:?usage: cluster.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: cluster.sh start|stop DIR}")
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

stop_pid_file() {
  local file=$1
  [ -f "$file" ] || return 0
  local pid
  pid=$(cat "$file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    $sudo kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$file"
}

case $action in
  start)
    for program in slurmctld slurmd munged sbatch; do
      command -v "$program" >/dev/null || { echo "cluster.sh: $program is missing: install slurmctld slurmd slurm-client munge (tools/packages.txt)" >&2; exit 1; }
    done
    mkdir -p "$dir/state" "$dir/spool"
    cpus=$(nproc)
    sed -e "s|@DIR@|$dir|g" -e "s|@CPUS@|$cpus|g" "$(dirname "$0")/slurm.conf.in" > "$dir/slurm.conf"
    # munged: its socket directory owned by munge, run as munge (it refuses root).
    if ! pgrep -x munged >/dev/null; then
      $sudo mkdir -p /run/munge && $sudo chown munge:munge /run/munge
      [ -f /etc/munge/munge.key ] || $sudo runuser -u munge -- mungekey --create
      $sudo runuser -u munge -- munged
    fi
    export SLURM_CONF=$dir/slurm.conf
    $sudo env SLURM_CONF="$SLURM_CONF" slurmctld -f "$SLURM_CONF"
    $sudo env SLURM_CONF="$SLURM_CONF" slurmd -f "$SLURM_CONF" -N localhost
    for _ in $(seq 120); do
      if scontrol ping 2>/dev/null | grep -q UP && sinfo -h -o "%T" 2>/dev/null | grep -q idle; then
        echo "slurm is up: export SLURM_CONF=$SLURM_CONF"
        exit 0
      fi
      sleep 0.5
    done
    echo "cluster.sh: the node did not become idle within 60 s; see $dir/slurmctld.log and $dir/slurmd.log" >&2
    tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    exit 1
    ;;
  stop)
    stop_pid_file "$dir/slurmd.pid"
    stop_pid_file "$dir/slurmctld.pid"
    # Jobs' step daemons outlive slurmd: end the ones whose configuration is this cluster's.
    pkill -f "slurmstepd.*" 2>/dev/null || true
    ;;
  *)
    echo "usage: cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac
