#!/usr/bin/env bash
# Smoke test of the test control plane (scripts/cluster/taas-cluster): a uniquely named instance
# with two kwok GPU nodes; checks scheduling by GPU count, FailedScheduling events, garbage
# collection of dependents, finish-pod exit codes, container logs and RBAC. Always tears the
# instance down.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NAME="smoke-$$-$RANDOM"
NS=smoke

cleanup() {
  local rc=$?
  if [ $rc -ne 0 ] && [ -n "${KUBECONFIG:-}" ]; then
    echo "--- pods and events at failure:" >&2
    kubectl get pods -A -o wide >&2 || true
    kubectl get events -A >&2 || true
  fi
  "$CLUSTER" down --name "$NAME" || true
  exit $rc
}
trap cleanup EXIT

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local what="$1" timeout="$2"
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out after ${timeout}s waiting for: $what"
    sleep 0.5
  done
}

pod_field() {
  kubectl -n "$NS" get pod "$1" -o "jsonpath=$2"
}

pod_is() {
  [ "$(pod_field "$1" '{.status.phase}')" = "$2" ]
}

gone() {
  local out
  if out="$(kubectl -n "$NS" get "$1" "$2" 2>&1)"; then return 1; fi
  grep -q NotFound <<<"$out"
}

gpu_pod() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $NS
spec:
  restartPolicy: Never
  containers:
  - name: tensorflow
    image: taas/trainer:test
    resources:
      limits:
        nvidia.com/gpu: "$2"
  - name: sidecar
    image: taas/sidecar:test
EOF
}

step "up --name $NAME"
start=$SECONDS
"$CLUSTER" up --name "$NAME" --nodes 2 --gpus-per-node 4 --owner-pid $$ >/dev/null
echo "up took $((SECONDS - start)) s" >&2
eval "$("$CLUSTER" env --name "$NAME")"
[ -f "$KUBECONFIG" ] || fail "env did not point KUBECONFIG at a file"
"$CLUSTER" status --name "$NAME" >&2

step "nodes carry the GPU capacity"
[ "$(kubectl get nodes -o name | sort | tr '\n' ' ')" = "node/taas-node-0 node/taas-node-1 " ] ||
  fail "unexpected nodes: $(kubectl get nodes -o name)"
[ "$(kubectl get node taas-node-1 -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}')" = 4 ] ||
  fail "taas-node-1 does not have 4 allocatable GPUs"

step "namespace and its default service account"
kubectl create namespace "$NS" >/dev/null
wait_for "service account $NS/default" 60 kubectl -n "$NS" get serviceaccount default

step "a pod asking for 1 GPU is bound to a GPU node and Running"
gpu_pod one-gpu 1 | kubectl apply -f - >/dev/null
wait_for "pod one-gpu Running" 120 pod_is one-gpu Running
node="$(pod_field one-gpu '{.spec.nodeName}')"
[[ "$node" == taas-node-[01] ]] || fail "one-gpu is on '$node', not a taas node"

step "a pod asking for more GPUs than any node has stays Pending with FailedScheduling"
gpu_pod too-many 5 | kubectl apply -f - >/dev/null
failed_scheduling() {
  kubectl -n "$NS" get events --field-selector involvedObject.name=too-many,reason=FailedScheduling \
    -o 'jsonpath={.items[*].message}' | grep -q 'Insufficient nvidia.com/gpu'
}
wait_for "FailedScheduling event for too-many" 120 failed_scheduling
pod_is too-many Pending || fail "too-many is not Pending"
[ -z "$(pod_field too-many '{.spec.nodeName}')" ] || fail "too-many was bound to a node"

step "deleting an owner garbage-collects its dependents"
kubectl -n "$NS" create configmap owner >/dev/null
uid="$(kubectl -n "$NS" get configmap owner -o 'jsonpath={.metadata.uid}')"
owner_ref="ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: $uid}]"
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: dependent, namespace: $NS, $owner_ref}
---
apiVersion: v1
kind: Pod
metadata: {name: dependent-pod, namespace: $NS, $owner_ref}
spec:
  restartPolicy: Never
  containers: [{name: tensorflow, image: taas/trainer:test}]
EOF
wait_for "pod dependent-pod Running" 120 pod_is dependent-pod Running
kubectl -n "$NS" delete configmap owner >/dev/null
wait_for "configmap dependent garbage-collected" 120 gone configmap dependent
wait_for "pod dependent-pod garbage-collected" 120 gone pod dependent-pod

step "finish-pod with a non-zero exit code makes the pod Failed"
"$CLUSTER" finish-pod --name "$NAME" "$NS" one-gpu 137
pod_is one-gpu Failed || fail "one-gpu is not Failed"
code="$(pod_field one-gpu '{.status.containerStatuses[?(@.name=="tensorflow")].state.terminated.exitCode}')"
[ "$code" = 137 ] || fail "tensorflow exit code is '$code', want 137"
code="$(pod_field one-gpu '{.status.containerStatuses[?(@.name=="sidecar")].state.terminated.exitCode}')"
[ "$code" = 0 ] || fail "sidecar exit code is '$code', want 0"

step "finish-pod with exit code 0 makes the pod Succeeded (pod created just before)"
gpu_pod succeeds 2 | kubectl apply -f - >/dev/null
"$CLUSTER" finish-pod --name "$NAME" "$NS" succeeds 0
pod_is succeeds Succeeded || fail "succeeds is not Succeeded"
code="$(pod_field succeeds '{.status.containerStatuses[?(@.name=="tensorflow")].state.terminated.exitCode}')"
[ "$code" = 0 ] || fail "tensorflow exit code is '$code', want 0"

step "finished pods stay finished (kwok does not rewrite their status)"
# A later change to the pod makes kwok look at it again.
kubectl -n "$NS" label pod one-gpu poke=1 >/dev/null
kubectl -n "$NS" label pod succeeds poke=1 >/dev/null
sleep 3
pod_is one-gpu Failed || fail "one-gpu went back from Failed to $(pod_field one-gpu '{.status.phase}')"
pod_is succeeds Succeeded || fail "succeeds went back to $(pod_field succeeds '{.status.phase}')"

step "finish-pod refuses a pod that never runs"
if out="$("$CLUSTER" finish-pod --name "$NAME" --timeout 2 "$NS" too-many 1 2>&1)"; then
  fail "finish-pod finished a Pending pod"
fi
grep -q "not Running" <<<"$out" || fail "unclear finish-pod message: $out"

step "RBAC: a service account without roles is denied, the admin is allowed"
kubectl -n "$NS" create serviceaccount nobody >/dev/null
token="$(kubectl -n "$NS" create token nobody)"
server="$(kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')"
if out="$(kubectl --kubeconfig /dev/null --server "$server" --insecure-skip-tls-verify \
  --token "$token" -n "$NS" get pods 2>&1)"; then
  fail "an unprivileged service account listed pods"
fi
grep -q 'Forbidden' <<<"$out" || fail "expected Forbidden, got: $out"
grep -q "system:serviceaccount:$NS:nobody" <<<"$out" || fail "token not authenticated: $out"
if out="$(kubectl --kubeconfig /dev/null --server "$server" --insecure-skip-tls-verify \
  -n "$NS" get pods 2>&1)"; then
  fail "an anonymous client listed pods"
fi
[ "$(kubectl auth can-i '*' '*' --all-namespaces)" = yes ] || fail "admin is not cluster-admin"

step "container logs: pod-log lines show in kubectl logs, and logs -f follows them"
gpu_pod logger 1 | kubectl apply -f - >/dev/null
wait_for "pod logger Running" 120 pod_is logger Running
"$CLUSTER" pod-log --name "$NAME" "$NS" logger "step 1 loss 0.5" "step 2 loss 0.25"
logs_have() { kubectl -n "$NS" logs logger -c tensorflow | grep -qx "$1"; }
wait_for "logger's log in kubectl logs" 60 logs_have "step 2 loss 0.25"
follow_out="$(mktemp)"
kubectl -n "$NS" logs -f logger -c tensorflow >"$follow_out" 2>&1 &
follower=$!
wait_for "logs -f to start" 60 grep -qx "step 1 loss 0.5" "$follow_out"
echo "step 3 loss 0.125" | "$CLUSTER" pod-log --name "$NAME" "$NS" logger
wait_for "logs -f to show a new line" 60 grep -qx "step 3 loss 0.125" "$follow_out"
kill "$follower" 2>/dev/null || true
wait "$follower" 2>/dev/null || true
rm -f "$follow_out"
kubectl -n "$NS" logs one-gpu -c tensorflow >/dev/null || fail "kubectl logs fails for a pod without pod-log"

step "down removes the instance"
"$CLUSTER" down --name "$NAME"
[ ! -d "${TAAS_CLUSTER_STATE:-/tmp/taas-cluster}/$NAME" ] || fail "state directory left behind"
unset KUBECONFIG
echo "PASS" >&2
