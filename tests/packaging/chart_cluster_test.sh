#!/usr/bin/env bash
# The chart against a real control plane (scripts/cluster/taas-cluster):
#  1. `kubectl apply --dry-run=server` of the rendered chart, default and non-default values;
#  2. `helm install` (cluster-wide) and a second, namespaced release; `helm upgrade` keeps the UI
#     token;
#  3. `kubectl auth can-i --as=system:serviceaccount:...`: the operator and UI accounts can do what
#     they need and nothing else (no Secrets, no node deletion, no other namespaces when scoped);
#  4. when the operator is built (argument 1: its path), it runs with a token of the chart's
#     ServiceAccount (not admin) and takes a TFJob through pods + services -> Running -> Succeeded.
#   chart_cluster_test.sh [TAAS_OPERATOR_BINARY]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
operator_binary="${1:-}"
cluster="$root/scripts/cluster/taas-cluster"
chart="$root/charts/taas"
source "$root/scripts/lib/common.sh"
helm_version="$(sed -n 's/^TAAS_HELM_VERSION=//p' "$root/scripts/setup.d/60-packaging.sh")"
helm="$TAAS_CACHE/helm-$helm_version/helm"
[ -x "$helm" ] || die "helm not found at $helm; run scripts/setup.sh"

name="pkg-$$-$RANDOM"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/taas-chart-cluster.XXXXXX")"
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; fi
  "$cluster" down --name "$name" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

passes=0 failures=0
ok() {
  echo "ok: $*"
  passes=$((passes + 1))
}
bad() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}
check() { # DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@" >"$tmp/check.out" 2>&1; then ok "$what"; else
    bad "$what"
    sed 's/^/    /' "$tmp/check.out" | tail -n 20
  fi
}
# Polls COMMAND until it succeeds or SECONDS pass.
wait_for() { # SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 1
  done
}

"$cluster" up --name "$name" --nodes 2 --gpus-per-node 4 >/dev/null
eval "$("$cluster" env --name "$name")"
k() { kubectl "$@"; }

for ns in taas-system taas-team team-a team-b; do k create namespace "$ns" >/dev/null; done
# Namespaces need their default ServiceAccount before pods can be admitted.
for ns in taas-system taas-team team-a team-b; do
  wait_for 60 k -n "$ns" get serviceaccount default || die "no default service account in $ns"
done

# The CRD (from crds/, through the chart's symlink) first, so TFJobs can be checked.
if ls "$root"/crds/*.yaml >/dev/null 2>&1; then
  "$helm" show crds "$chart" >"$tmp/crds.yaml"
  check "CRD applies (server dry run)" k apply --dry-run=server -f "$tmp/crds.yaml"
  k apply -f "$tmp/crds.yaml" >/dev/null
  k wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org >/dev/null
  have_crd=1
else
  echo "note: crds/ has no CRD yet; TFJob checks are skipped"
  have_crd=0
fi

# 1. Server-side dry run of both renderings.
"$helm" template t "$chart" --namespace taas-system >"$tmp/default.yaml"
"$helm" template n "$chart" --namespace taas-team -f "$root/tests/packaging/values-namespaced.yaml" \
  >"$tmp/namespaced.yaml"
check "default values: server dry run" k apply --dry-run=server -f "$tmp/default.yaml"
check "non-default values: server dry run" k apply --dry-run=server -f "$tmp/namespaced.yaml"

# 2. Real installs.
check "helm install (cluster-wide)" "$helm" install t "$chart" --namespace taas-system
check "helm install (namespaced)" "$helm" install n "$chart" --namespace taas-team \
  --set 'watchNamespaces={team-a}' --set operator.podGroups.enabled=true
token_before="$(k -n taas-system get secret t-taas-ui-token -o jsonpath='{.data.token}')"
check "helm upgrade" "$helm" upgrade t "$chart" --namespace taas-system --set operator.workers=2
token_after="$(k -n taas-system get secret t-taas-ui-token -o jsonpath='{.data.token}')"
check "upgrade keeps the UI token" test -n "$token_before" -a "$token_before" = "$token_after"

# 3. RBAC: what each account can and cannot do.
can() { # SA_NAMESPACE SA VERB RESOURCE [args...]
  local sa_ns="$1" sa="$2"
  shift 2
  check "$sa can $*" k auth can-i "$@" --as="system:serviceaccount:$sa_ns:$sa"
}
cannot() {
  local sa_ns="$1" sa="$2" answer
  shift 2
  answer="$(k auth can-i "$@" --as="system:serviceaccount:$sa_ns:$sa" 2>/dev/null || true)"
  if [ "$answer" = no ]; then ok "$sa cannot $*"; else bad "$sa cannot $* (answer: $answer)"; fi
}
op=(taas-system t-taas-operator)
for verb in get list watch update delete; do can "${op[@]}" "$verb" tfjobs.kubeflow.org -n team-b; done
can "${op[@]}" update tfjobs.kubeflow.org --subresource=status -n default
can "${op[@]}" update tfjobs.kubeflow.org/finalizers -n default
for resource in pods services; do
  for verb in get list watch create delete; do can "${op[@]}" "$verb" "$resource" -n default; done
done
can "${op[@]}" create events -n default
can "${op[@]}" patch events -n default
can "${op[@]}" create leases.coordination.k8s.io -n taas-system
can "${op[@]}" update leases.coordination.k8s.io/t-taas-operator -n taas-system
cannot "${op[@]}" update leases.coordination.k8s.io/kube-scheduler -n kube-system
cannot "${op[@]}" update leases.coordination.k8s.io/other -n taas-system
cannot "${op[@]}" create tfjobs.kubeflow.org -n default
cannot "${op[@]}" get secrets -n taas-system
cannot "${op[@]}" get secrets/t-taas-ui-token -n taas-system
cannot "${op[@]}" list secrets --all-namespaces
cannot "${op[@]}" get configmaps -n default
cannot "${op[@]}" delete nodes
cannot "${op[@]}" get nodes
cannot "${op[@]}" create pods/exec -n default
cannot "${op[@]}" create deployments.apps -n default
cannot "${op[@]}" create clusterrolebindings.rbac.authorization.k8s.io
cannot "${op[@]}" create serviceaccounts/token -n taas-system
cannot "${op[@]}" create podgroups.scheduling.x-k8s.io -n default
ui=(taas-system t-taas-ui)
can "${ui[@]}" list nodes
can "${ui[@]}" list pods --all-namespaces
for verb in get list watch create delete; do can "${ui[@]}" "$verb" tfjobs.kubeflow.org -n default; done
can "${ui[@]}" get pods/log -n default
can "${ui[@]}" list events -n default
cannot "${ui[@]}" create pods -n default
cannot "${ui[@]}" get pods -n team-b
cannot "${ui[@]}" create tfjobs.kubeflow.org -n team-b
cannot "${ui[@]}" get secrets/t-taas-ui-token -n taas-system
cannot "${ui[@]}" list secrets -n default
cannot "${ui[@]}" delete nodes
cannot "${ui[@]}" update tfjobs.kubeflow.org --subresource=status -n default
scoped=(taas-team n-taas-operator)
can "${scoped[@]}" create pods -n team-a
can "${scoped[@]}" create podgroups.scheduling.x-k8s.io -n team-a
can "${scoped[@]}" update leases.coordination.k8s.io/n-taas-operator -n taas-team
cannot "${scoped[@]}" create pods -n team-b
cannot "${scoped[@]}" list tfjobs.kubeflow.org -n default
cannot "${scoped[@]}" list tfjobs.kubeflow.org --all-namespaces
cannot "${scoped[@]}" get secrets -n team-a

# 4. The operator under the chart's ServiceAccount.
if [ -z "$operator_binary" ]; then
  echo "note: taas-operator is not part of this build; the operator scenario is skipped"
elif [ "$have_crd" != 1 ]; then
  bad "the operator scenario needs the TFJob CRD in crds/"
else
  # A kubeconfig holding only a token of t-taas-operator (and the cluster's CA).
  sa_token="$(k -n taas-system create token t-taas-operator --duration=1h)"
  server="$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$tmp/ca.crt"
  sa_kubeconfig="$tmp/operator.kubeconfig"
  KUBECONFIG="$sa_kubeconfig" k config set-cluster c --server="$server" \
    --certificate-authority="$tmp/ca.crt" --embed-certs >/dev/null
  KUBECONFIG="$sa_kubeconfig" k config set-credentials sa --token="$sa_token" >/dev/null
  KUBECONFIG="$sa_kubeconfig" k config set-context c --cluster=c --user=sa >/dev/null
  KUBECONFIG="$sa_kubeconfig" k config use-context c >/dev/null
  check "the token is the operator's, not admin's" \
    bash -c "[ \"\$(KUBECONFIG='$sa_kubeconfig' kubectl auth whoami -o jsonpath='{.status.userInfo.username}')\" = system:serviceaccount:taas-system:t-taas-operator ]"

  # The operator's flags as the chart passes them (templates/_helpers.tpl "taas.operatorArgs"),
  # with a free port for /readyz, which answers once the leader's caches are synced.
  "$operator_binary" --kubeconfig="$sa_kubeconfig" --workers=2 --health-address=127.0.0.1 \
    --health-port=0 --port-file="$tmp/health.port" --log-level=info --leader-elect=true \
    --lease-namespace=taas-system --lease-name=t-taas-operator --lease-duration-seconds=15 \
    --identity="test-$$" >"$tmp/operator.log" 2>&1 &
  operator_pid=$!
  wait_for 60 test -s "$tmp/health.port" || die "the operator wrote no health port: $(tail "$tmp/operator.log")"
  health_port="$(cat "$tmp/health.port")"
  check "operator ready (/readyz)" wait_for 120 curl -fsS "http://127.0.0.1:$health_port/readyz"

  cat >"$tmp/job.yaml" <<'EOF'
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: rbac-job
  namespace: default
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: taas/trainer:0.1.0
              command: [/opt/taas/bin/fashion-mnist-mlp]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: taas/trainer:0.1.0
              command: [/opt/taas/bin/fashion-mnist-mlp]
              resources:
                limits: {nvidia.com/gpu: 1}
EOF
  k apply -f "$tmp/job.yaml" >/dev/null
  for pod in rbac-job-ps-0 rbac-job-worker-0 rbac-job-worker-1; do
    check "pod $pod created" wait_for 120 k -n default get pod "$pod"
    check "service $pod created" wait_for 60 k -n default get service "$pod"
  done
  running() {
    [ "$(k -n default get tfjob rbac-job -o jsonpath='{.status.conditions[?(@.type=="Running")].status}')" = True ]
  }
  check "TFJob status Running" wait_for 120 running
  check "worker 0 finishes" "$cluster" finish-pod --name "$name" default rbac-job-worker-0 0
  succeeded() {
    [ "$(k -n default get tfjob rbac-job -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].status}')" = True ]
  }
  check "TFJob status Succeeded" wait_for 120 succeeded
  check "events recorded by the operator" \
    bash -c "kubectl -n default get events --field-selector involvedObject.name=rbac-job -o name | grep -q ."
  check "operator hit no RBAC denial" bash -c "! grep -Eiq 'forbidden|403' '$tmp/operator.log'"
  check "operator took the chart's Lease" \
    bash -c "[ \"\$(kubectl -n taas-system get lease t-taas-operator -o jsonpath='{.spec.holderIdentity}')\" = test-$$ ]"
  if [ "$failures" -gt 0 ]; then
    echo "--- operator log (tail)"
    tail -n 40 "$tmp/operator.log"
  fi
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
