#!/usr/bin/env bash
# Fault handling of scripts/cluster/taas-cluster: a busy API server port is refused clearly and
# leaves nothing behind; a half-started instance is cleaned up by the next `up`; a healthy
# instance is reused; `down` then `up` works. Uses its own instance and always tears it down.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NAME="faults-$$-$RANDOM"
STATE="${TAAS_CLUSTER_STATE:-/tmp/taas-cluster}/$NAME"
LISTENER=""
OWNER=""

cleanup() {
  local rc=$?
  [ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null || true
  [ -n "$OWNER" ] && kill "$OWNER" 2>/dev/null || true
  "$CLUSTER" down --name "$NAME" || true
  exit $rc
}
trap cleanup EXIT

# dead PID: the process is gone or a zombie (exited, not yet reaped by its new parent).
dead() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"
  [ "${stat%% *}" = Z ]
}

step "up on a busy --apiserver-port fails with a clear message and leaves nothing running"
port=$((20000 + RANDOM % 10000))
openssl s_server -quiet -nocert -accept "$port" </dev/null >/dev/null 2>&1 &
LISTENER=$!
deadline=$((SECONDS + 20))
until ss -Htln "sport = :$port" | grep -q .; do
  [ $SECONDS -lt $deadline ] || fail "test listener on port $port did not start"
  sleep 0.1
done
if out="$("$CLUSTER" up --name "$NAME" --nodes 1 --apiserver-port "$port" 2>&1)"; then
  fail "up succeeded on a busy port"
fi
grep -q "port $port is already in use" <<<"$out" || fail "unclear message for a busy port: $out"
[ ! -d "$STATE" ] || fail "state left behind after a refused up"
kill "$LISTENER"
LISTENER=""

step "up"
"$CLUSTER" up --name "$NAME" --nodes 1 --gpus-per-node 2 --owner-pid $$ >/dev/null
kubeconfig="$STATE/kubeconfig"
kc() { "$CLUSTER" kubectl --name "$NAME" "$@"; }
kc get node taas-node-0 >/dev/null

step "up on a healthy instance reuses it"
pid="$(cat "$STATE/pids/kube-apiserver")"
out="$("$CLUSTER" up --name "$NAME" --nodes 1 2>&1)"
grep -q "already running" <<<"$out" || fail "second up did not report the running instance: $out"
[ "$(cat "$STATE/pids/kube-apiserver")" = "$pid" ] || fail "second up restarted the apiserver"

step "a half-started instance (apiserver killed) is cleaned up by the next up"
etcd_pid="$(cat "$STATE/pids/etcd")"
kill -KILL "$pid"
out="$("$CLUSTER" up --name "$NAME" --nodes 1 2>&1)" || fail "up did not recover: $out"
grep -q "half-started" <<<"$out" || fail "up did not say it cleaned up: $out"
dead "$etcd_pid" || fail "the old etcd (pid $etcd_pid) is still running"
[ -f "$kubeconfig" ] || fail "no kubeconfig after recovery"
kc get node taas-node-0 >/dev/null || fail "recovered instance does not answer"

step "down then up works"
pids="$(cat "$STATE"/pids/*)"
"$CLUSTER" down --name "$NAME"
for p in $pids; do
  dead "$p" || fail "process $p survived down"
done
[ ! -d "$STATE" ] || fail "down left the state directory"
"$CLUSTER" up --name "$NAME" --nodes 1 >/dev/null
kc get node taas-node-0 >/dev/null || fail "instance does not answer after down/up"
"$CLUSTER" down --name "$NAME"

step "an instance started with --owner-pid goes down when its owner exits"
sleep 600 &
OWNER=$!
"$CLUSTER" up --name "$NAME" --nodes 1 --owner-pid "$OWNER" >/dev/null
pids="$(cat "$STATE"/pids/*)"
kill "$OWNER"
wait "$OWNER" 2>/dev/null || true
OWNER=""
deadline=$((SECONDS + 60))
while [ -d "$STATE" ]; do
  [ $SECONDS -lt $deadline ] || fail "instance still up 60s after its owner exited"
  sleep 0.5
done
for p in $pids; do
  dead "$p" || fail "process $p survived its owner"
done
"$CLUSTER" up --name "$NAME" --nodes 1 --owner-pid $$ >/dev/null

step "bad arguments are refused"
if out="$("$CLUSTER" up --name "$NAME" --nodes many 2>&1)"; then fail "--nodes many accepted"; fi
grep -q -- "--nodes must be" <<<"$out" || fail "unclear message: $out"
if out="$("$CLUSTER" up --name "$NAME" --owner-pid 999999999 2>&1)"; then fail "bad owner accepted"; fi
grep -q -- "--owner-pid 999999999 is not a running process" <<<"$out" || fail "unclear message: $out"
if out="$("$CLUSTER" finish-pod --name "$NAME" default nosuchpod 1 2>&1)"; then
  fail "finish-pod of a missing pod succeeded"
fi
grep -q "cannot read pod default/nosuchpod" <<<"$out" || fail "unclear message: $out"
echo PASS >&2
