#!/usr/bin/env bash
# Stop the single-node SLURM cluster started by .ci/slurm/up.sh, by the daemons' pid files
# (slurmd, slurmctld, slurmdbd, mysqld, munged — the reverse of the start order). Jobs still in the
# queue are cancelled first. Stopping what is not running is not an error. Configuration, the
# accounting database and the logs stay, so a later up.sh starts fast.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
LOG=${SOJOURN_SLURM_LOG:-/var/log/slurm/sojourn-up.log}
mkdir -p "$(dirname "$LOG")"
log() { printf '[slurm-down %s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$LOG"; }

stop() {  # stop PIDFILE COMM
  local pidfile=$1 comm=$2 pid i
  if [[ ! -s $pidfile ]]; then log "$comm: no pid file"; return 0; fi
  pid=$(tr -dc '0-9' <"$pidfile")
  if [[ -z $pid ]] || ! kill -0 "$pid" 2>/dev/null || ! [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ ^($comm)$ ]]; then
    log "$comm: not running (stale pid file)"; rm -f "$pidfile"; return 0
  fi
  kill -TERM "$pid"
  for ((i = 0; i < 60; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$comm (pid $pid) still running after 30 s; sending KILL"; kill -KILL "$pid" 2>/dev/null
  fi
  log "$comm (pid $pid) stopped"
}

if command -v scontrol >/dev/null && scontrol ping 2>/dev/null | grep -q UP; then
  if [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
    log "cancelling queued/running jobs: $(squeue -h -o %i | tr '\n' ' ')"
    scancel --full --partition=debug 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do [[ -z $(squeue -h -t R,CG -o %i 2>/dev/null) ]] && break; sleep 0.5; done
  fi
fi
stop /run/slurm/slurmd.pid slurmd
stop /run/slurm/slurmctld.pid slurmctld
stop /run/slurm/slurmdbd.pid slurmdbd
stop /run/mysqld/mysqld.pid "mysqld|mariadbd"  # mysqld_safe exits after a clean mysqld shutdown
stop /run/munge/munged.pid munged
