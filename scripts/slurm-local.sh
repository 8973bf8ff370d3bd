#!/usr/bin/env bash
# A real single-node Slurm for the tests of `lpu sweep --backend slurm` (and for trying it
# out): its own munged, slurmctld and slurmd, every file in one scratch directory, on ports
# derived from that directory's path (checked free), so it cannot clash with a system Slurm
# or another copy. Needs root and Debian's slurmctld slurmd slurm-client munge
# (scripts/install-deps.sh installs them).
#
#   scripts/slurm-local.sh start DIR   # prints the SLURM_CONF to export; waits until the node is idle
#   scripts/slurm-local.sh stop DIR    # stops the daemons it started (by their pid files)
#
# Every wait is bounded; on a failure it prints the daemons' logs and exits 1.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
S=$(mkdir -p "$2" && cd "$2" && pwd)

die() {
  echo "slurm-local: $*" >&2
  for f in "$S"/log/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}

stop_pidfile() {  # kill the daemon whose pid file we wrote, and wait (bounded) for it to go
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

stop() {
  stop_pidfile "$S/slurmd.pid"
  stop_pidfile "$S/slurmctld.pid"
  stop_pidfile "$S/munge/munged.pid"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Two free ports, starting from a number derived from the scratch path.
pick_ports() {
  local h p
  h=$(printf '%s' "$S" | cksum | cut -d' ' -f1)
  p=$((20000 + (h % 20000) * 2))
  for _ in $(seq 100); do
    if port_free "$p" && port_free $((p + 1)); then echo "$p"; return 0; fi
    p=$((p + 2)); [ $p -ge 60000 ] && p=20000
  done
  return 1
}

start() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (slurmd runs jobs as their users; the tests run as root)"
  for b in munged slurmctld slurmd sbatch squeue sinfo scontrol; do
    command -v "$b" >/dev/null || die "$b not found: install slurmctld slurmd slurm-client munge (scripts/install-deps.sh)"
  done
  stop   # leftovers of an earlier run in the same scratch directory
  rm -rf "$S/state" "$S/spool" "$S/log" "$S/munge"
  mkdir -p "$S/state" "$S/spool" "$S/log" "$S/munge"
  chmod 700 "$S/munge"

  # munge: our own daemon, key and socket.
  head -c 1024 /dev/urandom > "$S/munge/munge.key"
  chmod 400 "$S/munge/munge.key"
  local sock="$S/munge/munge.socket"
  munged --force --socket="$sock" --key-file="$S/munge/munge.key" --pid-file="$S/munge/munged.pid" \
    --log-file="$S/log/munged.log" --seed-file="$S/munge/munged.seed" || die "munged did not start"
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  munge --socket="$sock" -n | unmunge --socket="$sock" >/dev/null || die "munge -n | unmunge fails"

  local host port cpus
  host=$(hostname -s)
  port=$(pick_ports) || die "no two free TCP ports found"
  cpus=$(nproc)
  cat > "$S/slurm.conf" <<EOF
# Written by scripts/slurm-local.sh: a single-node test cluster.
ClusterName=lpu-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# finished jobs stay visible to scontrol for 10 minutes (no accounting database here)
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$S/slurm.conf"
  slurmctld -f "$SLURM_CONF" || die "slurmctld did not start"
  slurmd -f "$SLURM_CONF" || die "slurmd did not start"
  local state=""
  for _ in $(seq 300); do
    state=$(timeout 5 sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = "idle" ] && break
    sleep 0.1
  done
  [ "$state" = "idle" ] || die "the node is not idle after 30 s (sinfo says '$state')"
  echo "export SLURM_CONF=$SLURM_CONF"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
