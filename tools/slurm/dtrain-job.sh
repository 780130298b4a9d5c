#!/usr/bin/env bash
# The batch script dtrain's jobs run under Slurm (dtrain schedule submits it; so can users):
#
#   sbatch --requeue --signal=B:USR1@60 -n 2 tools/slurm/dtrain-job.sh srun dtrain train --checkpoint-dir DIR ...
#   sbatch --requeue --signal=B:USR1@60 -n 2 tools/slurm/dtrain-job.sh mpirun dtrain train --checkpoint-dir DIR ...
#
# The first argument is the launcher: srun (srun --mpi=pmix, one task per allocated rank) or
# mpirun (Open MPI's mpirun inside the allocation). The rest is the command.
#
# Stopping without losing work: Slurm's preemption and time limit send SIGTERM to every process
# of the job, and --signal=B:USR1@N sends USR1 to this script N seconds before the limit. This
# script forwards USR1/USR2 to the launcher (which forwards them to the ranks) and keeps waiting
# while dtrain writes its checkpoint (were it to exit, Slurm would kill the job's processes at
# once). dtrain ends with status 75 when it stopped early; after a warning signal the script then
# requeues the job itself (preemption requeues it already). Requeued, dtrain resumes from its
# --checkpoint-dir by itself (SLURM_RESTART_COUNT).
set -u
launcher=${1:?usage: dtrain-job.sh srun|mpirun COMMAND...}
shift
case $launcher in
  srun) srun --mpi=pmix --kill-on-bad-exit=0 "$@" & ;;
  mpirun)
    root=()
    [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
    mpirun "${root[@]}" --oversubscribe --bind-to none "$@" &
    ;;
  *) echo "dtrain-job.sh: the launcher must be srun or mpirun, got '$launcher'" >&2; exit 2 ;;
esac
child=$!
warned=0
forward() { warned=1; kill -"$1" "$child" 2>/dev/null; }
trap 'forward USR1' USR1
trap 'forward USR2' USR2
trap ':' TERM  # every process of the job got it: wait for the checkpoint
status=0
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break  # a trap interrupted the wait: wait again
done
echo "dtrain-job.sh: $launcher ended with status $status (restart ${SLURM_RESTART_COUNT:-0})"
if [ "$status" -eq 75 ] && [ "$warned" -eq 1 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
  # Stopped ahead of the time limit: back into the queue; the next start resumes.
  scontrol requeue "$SLURM_JOB_ID"
fi
exit "$status"
