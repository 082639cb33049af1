#!/usr/bin/env bash
# Bring up a real single-node SLURM cluster (with accounting) on this machine, idempotently.
#
#   munged -> mysqld (MariaDB) -> slurmdbd -> `sacctmgr add cluster` -> slurmctld -> slurmd
#
# Used by .ci/run before the test suite (tests/workflow/test_slurm.py submits real jobs to it) and by hand:
#   bash .ci/slurm/up.sh            # start (a second call finds everything running and returns fast)
#   bash .ci/slurm/up.sh --status   # exit 0 iff every daemon runs and the node answers; starts nothing
#   bash .ci/slurm/down.sh          # stop the daemons by their pid files
#
# Needs root and Debian 12 (bookworm). Installs slurm-wlm, slurmdbd, munge and mariadb-server with apt
# only if they are missing. No systemd: every daemon is started directly, detached, its stdio sent to
# its log file (so a CI runner that waits for the pipe to close is not held open). Everything this
# script does is written to $SOJOURN_SLURM_LOG; on failure the tail of that log and of every daemon's
# log is printed to stderr and the exit status is non-zero.
set -euo pipefail

CLUSTER=sojourn
PARTITION=debug
LOGDIR=/var/log/slurm
LOG=${SOJOURN_SLURM_LOG:-$LOGDIR/sojourn-up.log}
RUNDIR=/run/slurm
CONFDIR=/etc/slurm
DB=slurm_acct_db
DBUSER=slurm
MYSQL_LOG=/var/log/mysql/error.log
MUNGE_PID=/run/munge/munged.pid
MYSQL_PID=/run/mysqld/mysqld.pid
DBD_PID=$RUNDIR/slurmdbd.pid
CTLD_PID=$RUNDIR/slurmctld.pid
SLURMD_PID=$RUNDIR/slurmd.pid
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server)
# A command of each package, to decide whether it is installed.
NEEDED_CMDS=(slurmctld slurmd sinfo sbatch sacct sacctmgr slurmdbd munged mysqld_safe mariadb)

export DEBIAN_FRONTEND=noninteractive
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

mode=up
case "${1:-}" in
  "") ;;
  --status) mode=status ;;
  -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--status]" >&2; exit 2 ;;
esac

T0=$(date +%s)
mkdir -p "$LOGDIR"
log() { printf '[slurm-up %s +%ss] %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - T0 ))" "$*" | tee -a "$LOG"; }
# Run a command with its output going to the log file only.
q() { "$@" >>"$LOG" 2>&1; }
# Start a daemon: stdio to the log, and without the lock descriptor 9 (a daemon holding it would
# block every later call of this script).
daemon() { "$@" </dev/null >>"$LOG" 2>&1 9>&-; }

# ---------------------------------------------------------------------------------------------- helpers
alive() {  # alive PIDFILE COMM: the pid file names a live process whose command name is COMM
  local pid
  [[ -s $1 ]] || return 1
  pid=$(tr -dc '0-9' <"$1")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ ^($2)$ ]]
}

wait_for() {  # wait_for SECONDS DESCRIPTION CMD...: poll CMD every 0.5 s until it succeeds
  local limit=$1 what=$2 i
  shift 2
  for ((i = 0; i < limit * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "gave up after ${limit}s waiting for: $what"
  return 1
}

node_state() { sinfo -h -n "$NODE" -o '%T' 2>/dev/null | head -n1; }
node_usable() { [[ $(node_state) =~ ^(idle|mixed|allocated|completing)$ ]]; }

dump_logs() {
  {
    echo "=================== SLURM set-up FAILED (exit $1) — diagnostics ==================="
    for f in "$LOG" "$LOGDIR/slurmdbd.log" "$LOGDIR/slurmctld.log" "$LOGDIR/slurmd.log" \
             /var/log/munge/munged.log "$MYSQL_LOG"; do
      [[ -f $f ]] || continue
      echo "------------------- tail -n 40 $f -------------------"
      tail -n 40 "$f"
    done
    echo "------------------- processes -------------------"
    ps -eo pid,user,comm,args | grep -E 'munged|mysqld|slurm' | grep -v grep || true
    echo "==================================================================================="
  } >&2
}

# ------------------------------------------------------------------------------------- status only
NODE=$(hostname -s)
if [[ $mode == status ]]; then
  command -v sinfo >/dev/null || { echo "sinfo not installed"; exit 1; }
  for pair in "$MUNGE_PID munged" "$MYSQL_PID mysqld|mariadbd" "$DBD_PID slurmdbd" "$CTLD_PID slurmctld" \
              "$SLURMD_PID slurmd"; do
    # shellcheck disable=SC2086
    alive $pair || { echo "${pair#* } not running"; exit 1; }
  done
  node_usable || { echo "node $NODE not usable (state: $(node_state))"; exit 1; }
  echo "SLURM cluster '$CLUSTER' is up (node $NODE: $(node_state))"
  exit 0
fi

[[ $(id -u) == 0 ]] || { echo "up.sh must run as root" >&2; exit 1; }
added_policy=0  # 1 while this script's own /usr/sbin/policy-rc.d is in place (removed on any exit)
trap 'rc=$?; if ((added_policy)); then rm -f /usr/sbin/policy-rc.d; fi; [[ $rc == 0 ]] || dump_logs "$rc"' EXIT

# One set-up at a time.
exec 9>/run/sojourn-slurm-up.lock
flock -w 600 9 || { echo "another up.sh holds /run/sojourn-slurm-up.lock" >&2; exit 1; }

log "start (log: $LOG)"

# ------------------------------------------------------------------------------------- 1. packages
missing=0
for c in "${NEEDED_CMDS[@]}"; do command -v "$c" >/dev/null || { missing=1; break; }; done
if ((missing)); then
  log "installing ${PACKAGES[*]} with apt (missing: $c)"
  # Keep package maintainer scripts from starting services during the install (no systemd here;
  # this script starts the daemons itself). Only added if the image has no policy already.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  # One retry each: a mirror hiccup should not fail CI.
  # (Waits for a dpkg lock held by e.g. unattended-upgrades on a fresh VM.)
  APT=(apt-get -q -o DPkg::Lock::Timeout=300)
  q "${APT[@]}" update || { sleep 5; q "${APT[@]}" update; }
  apt_install() {
    q "${APT[@]}" install -y --no-install-recommends \
      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${PACKAGES[@]}"
  }
  apt_install || { sleep 5; log "apt-get install failed; retrying once"; apt_install; }
  if ((added_policy)); then rm -f /usr/sbin/policy-rc.d; added_policy=0; fi
  for c in "${NEEDED_CMDS[@]}"; do command -v "$c" >/dev/null || { log "still missing after install: $c"; exit 1; }; done
  log "packages installed: $(dpkg-query -W -f='${Version}' slurmctld) (slurm)"
else
  log "packages present"
fi

# ----------------------------------------------------------------------------------- 2. config files
NCPU=$(nproc)
MEM_MIB=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
# Leave room for the OS and the daemons: 90 % of the machine, at most 1 GiB held back.
HOLD=$(( MEM_MIB / 10 < 1024 ? MEM_MIB / 10 : 1024 ))
REALMEM=$(( MEM_MIB - HOLD ))
mkdir -p "$CONFDIR" "$RUNDIR" /var/spool/slurmctld /var/spool/slurmd "$LOGDIR"

changed=()  # config files whose content changed in this call
install_conf() {  # install_conf TMPFILE DEST MODE
  if [[ -f $2 ]] && cmp -s "$1" "$2"; then rm -f "$1"; else
    install -m "$3" -o root -g root "$1" "$2"; rm -f "$1"; changed+=("$2"); fi
}

# Database password: keep the one already in slurmdbd.conf, otherwise make one.
DBPASS=""
if [[ -f $CONFDIR/slurmdbd.conf ]]; then
  DBPASS=$(sed -n 's/^StoragePass=//p' "$CONFDIR/slurmdbd.conf" | head -n1)
fi
[[ -n $DBPASS ]] || DBPASS=$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)

tmp=$(mktemp)
cat >"$tmp" <<EOF
# Written by sojourn .ci/slurm/up.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
DebugLevel=info
LogFile=$LOGDIR/slurmdbd.log
PidFile=$DBD_PID
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=$DBUSER
StoragePass=$DBPASS
StorageLoc=$DB
EOF
install_conf "$tmp" "$CONFDIR/slurmdbd.conf" 0600

tmp=$(mktemp)
cat >"$tmp" <<EOF
# Written by sojourn .ci/slurm/up.sh: a single-node cluster for tests, on $NODE.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
# Use the configured node values even if the hardware report differs (VMs, containers).
SlurmdParameters=config_overrides
# Scheduling: fast for tests.
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
InactiveLimit=0
KillWait=5
MinJobAge=300
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=60
TCPTimeout=5
Waittime=0
# Accounting through slurmdbd (Snakemake's SLURM executor polls job states with sacct).
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$NCPU RealMemory=$REALMEM State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
install_conf "$tmp" "$CONFDIR/slurm.conf" 0644
# MariaDB: slurmdbd's recommended lock timeout; no native AIO (io_uring/libaio are often blocked in
# containers, and this database is tiny).
tmp=$(mktemp)
cat >"$tmp" <<EOF
# Written by sojourn .ci/slurm/up.sh
[mysqld]
innodb_lock_wait_timeout = 900
innodb_use_native_aio = 0
EOF
mkdir -p /etc/mysql/mariadb.conf.d
install_conf "$tmp" /etc/mysql/mariadb.conf.d/60-sojourn-slurm.cnf 0644
((${#changed[@]})) && log "config written: ${changed[*]}" || log "config unchanged"

stop_pid() {  # stop_pid PIDFILE COMM
  if alive "$1" "$2"; then
    local pid; pid=$(tr -dc '0-9' <"$1")
    kill "$pid"
    wait_for 30 "$2 to exit" bash -c "! kill -0 $pid"
  fi
}
# A daemon already running with an outdated config is restarted.
if [[ " ${changed[*]} " == *" $CONFDIR/slurm.conf "* ]]; then
  stop_pid "$SLURMD_PID" slurmd; stop_pid "$CTLD_PID" slurmctld
fi
if [[ " ${changed[*]} " == *" $CONFDIR/slurmdbd.conf "* ]]; then
  stop_pid "$DBD_PID" slurmdbd
fi
if [[ " ${changed[*]} " == *"/60-sojourn-slurm.cnf "* ]]; then
  stop_pid "$MYSQL_PID" "mysqld|mariadbd"
fi

started=0
# ----------------------------------------------------------------------------------------- 3. munge
if ! alive "$MUNGE_PID" munged; then
  if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating /etc/munge/munge.key"
    install -d -m 0700 -o munge -g munge /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
  install -d -m 0755 -o munge -g munge /run/munge
  install -d -m 0700 -o munge -g munge /var/lib/munge /var/log/munge
  rm -f "$MUNGE_PID" /run/munge/munge.socket.2.lock
  log "starting munged"
  daemon runuser -u munge -- /usr/sbin/munged --force
  wait_for 20 "munged pid file" alive "$MUNGE_PID" munged
  started=1
fi
wait_for 20 "a munge credential to round-trip" bash -c 'munge -n | unmunge'

# --------------------------------------------------------------------------------------- 4. MariaDB
if ! alive "$MYSQL_PID" "mysqld|mariadbd"; then
  install -d -m 0755 -o mysql -g mysql /run/mysqld
  install -d -m 0750 -o mysql -g adm /var/log/mysql
  if [[ ! -d /var/lib/mysql/mysql ]]; then
    log "initialising the MariaDB data directory"
    q mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db
  fi
  log "starting mysqld_safe"
  daemon setsid -f mysqld_safe --user=mysql --log-error="$MYSQL_LOG"
  wait_for 60 "MariaDB to answer" mariadb-admin ping
  wait_for 10 "mysqld pid file" alive "$MYSQL_PID" "mysqld|mariadbd"
  started=1
fi
q mariadb -e "CREATE DATABASE IF NOT EXISTS $DB;
  CREATE USER IF NOT EXISTS '$DBUSER'@'localhost' IDENTIFIED BY '$DBPASS';
  ALTER USER '$DBUSER'@'localhost' IDENTIFIED BY '$DBPASS';
  GRANT ALL ON $DB.* TO '$DBUSER'@'localhost';
  FLUSH PRIVILEGES;"

# -------------------------------------------------------------------------------------- 5. slurmdbd
if ! alive "$DBD_PID" slurmdbd; then
  log "starting slurmdbd"
  rm -f "$DBD_PID"
  daemon /usr/sbin/slurmdbd
  wait_for 60 "slurmdbd to answer" sacctmgr -n show cluster
  started=1
fi
if [[ -z $(sacctmgr -n -P show cluster "$CLUSTER" format=cluster 2>>"$LOG") ]]; then
  log "registering cluster $CLUSTER"
  q sacctmgr -i add cluster "$CLUSTER"
fi

# ---------------------------------------------------------------------------- 6. slurmctld, slurmd
if ! alive "$CTLD_PID" slurmctld; then
  log "starting slurmctld"
  rm -f "$CTLD_PID"
  daemon /usr/sbin/slurmctld
  wait_for 60 "slurmctld to answer" bash -c 'scontrol ping | grep -q UP'
  started=1
fi
if ! alive "$SLURMD_PID" slurmd; then
  log "starting slurmd"
  rm -f "$SLURMD_PID"
  daemon /usr/sbin/slurmd
  started=1
fi

# ---------------------------------------------------------------------------------- 7. usable node
if ! wait_for 30 "node $NODE to become idle" node_usable; then
  # A node that was DOWN/DRAINED from an earlier run (unclean stop, reboot) is put back to work.
  log "node state '$(node_state)', reason: $(sinfo -h -n "$NODE" -o '%E'); resuming it"
  q scontrol update NodeName="$NODE" State=RESUME || true
  wait_for 30 "node $NODE to become idle after resume" node_usable
fi
log "node $NODE: $(node_state), $NCPU CPUs, RealMemory=${REALMEM} MiB"

# ------------------------------------------------------------------ 8. smoke test: sbatch + sacct
# Done whenever a daemon was (re)started; a warm call with everything running skips it.
if ((started)) || [[ ${SOJOURN_SLURM_SMOKE:-0} == 1 ]]; then
  jid=$(sbatch --parsable -p "$PARTITION" -J sojourn-smoke -o /dev/null -e /dev/null --wrap 'true')
  log "smoke job $jid submitted"
  wait_for 90 "smoke job $jid to be COMPLETED in sacct" \
    bash -c "sacct -n -X -P -j $jid -o State | grep -qx COMPLETED"
  log "smoke job $jid COMPLETED and recorded by sacct"
fi

log "SLURM cluster '$CLUSTER' is up ($(( $(date +%s) - T0 ))s)"
