#!/usr/bin/env bash
# The chart against a real control plane (scripts/cluster/taas-cluster):
#  1. `kubectl apply --dry-run=server` of the rendered chart, default and non-default values;
#  2. `helm install` (cluster-wide) and a second, namespaced release; `helm upgrade` keeps the UI
#     token;
#  3. `kubectl auth can-i --as=system:serviceaccount:...`: the operator and UI accounts can do what
#     they need and nothing else (no Secrets, no node deletion, no other namespaces when scoped);
#  4. when the operator is built (argument 1: its path), it runs with a token of the chart's
#     ServiceAccount (not admin) and takes a TFJob through pods + services -> Running -> Succeeded;
#  5. when the UI server is built too (argument 2), it runs with a token of the chart's UI
#     account and serves the cluster page and the job's detail (nodes, pods in every namespace,
#     events) without an RBAC denial.
#   chart_cluster_test.sh [TAAS_OPERATOR_BINARY [TAAS_UI_BINARY]]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
operator_binary="${1:-}"
ui_binary="${2:-}"
for binary in "$operator_binary" "$ui_binary"; do
  [ -z "$binary" ] || [ -x "$binary" ] || {
    echo "error: $binary is part of this build but was not built (build everything first)" >&2
    exit 1
  }
done
cluster="$root/scripts/cluster/taas-cluster"
chart="$root/charts/taas"
source "$root/scripts/lib/common.sh"
helm_version="$(sed -n 's/^TAAS_HELM_VERSION=//p' "$root/scripts/setup.d/60-packaging.sh")"
helm="$TAAS_CACHE/helm-$helm_version/helm"
[ -x "$helm" ] || die "helm not found at $helm; run scripts/setup.sh"

name="pkg-$$-$RANDOM"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/taas-chart-cluster.XXXXXX")"
operator_pid=""
ui_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; fi
  if [ -n "$ui_pid" ]; then kill "$ui_pid" 2>/dev/null || true; fi
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
# Succeeds when LOG shows no answer of 403 Forbidden from the API server (its message always says
# "forbidden"; a bare 403 must stand alone, not be the milliseconds of a timestamp).
no_rbac_denial() { # LOG
  ! grep -Eiq 'forbidden|(^|[^0-9.])403([^0-9]|$)' "$1"
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
# For API groups the server does not serve (PodGroups without a gang scheduler installed),
# `kubectl auth can-i` misreads "podgroups.scheduling.x-k8s.io" as version "scheduling" of group
# "x-k8s.io"; a SubjectAccessReview names the group exactly.
allowed() { # SA_NAMESPACE SA NAMESPACE VERB GROUP RESOURCE -> prints true/false
  k create -o jsonpath='{.status.allowed}' -f - <<EOF
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: system:serviceaccount:$1:$2
  groups: [system:serviceaccounts, "system:serviceaccounts:$1", system:authenticated]
  resourceAttributes: {namespace: "$3", verb: $4, group: $5, resource: $6}
EOF
}
sar_check() { # EXPECTED(true|false) SA_NAMESPACE SA NAMESPACE VERB GROUP RESOURCE
  local expected="$1" answer
  shift
  answer="$(allowed "$@")"
  [ -n "$answer" ] || answer=false # the API omits `allowed: false`
  if [ "$answer" = "$expected" ]; then ok "$2 allowed=$expected: $4 $6.$5 in $3"; else
    bad "$2 allowed=$expected: $4 $6.$5 in $3 (answer: $answer)"
  fi
}
op=(taas-system t-taas-operator)
for verb in get list watch delete; do can "${op[@]}" "$verb" tfjobs.kubeflow.org -n team-b; done
can "${op[@]}" update tfjobs.kubeflow.org --subresource=status -n default
can "${op[@]}" update tfjobs.kubeflow.org --subresource=finalizers -n default
cannot "${op[@]}" update tfjobs.kubeflow.org -n default
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
cannot "${op[@]}" patch nodes
# Node failure (operator.nodeFailureSeconds, on by default): the nodes its pods run on, read.
for verb in get list watch; do can "${op[@]}" "$verb" nodes; done
cannot "${op[@]}" create pods --subresource=exec -n default
cannot "${op[@]}" get pods --subresource=log -n default
cannot "${op[@]}" create deployments.apps -n default
cannot "${op[@]}" create clusterrolebindings.rbac.authorization.k8s.io
cannot "${op[@]}" create serviceaccounts --subresource=token -n taas-system
sar_check false "${op[@]}" default create scheduling.x-k8s.io podgroups
ui=(taas-system t-taas-ui)
can "${ui[@]}" list nodes
can "${ui[@]}" list pods --all-namespaces
for verb in get list watch create delete; do can "${ui[@]}" "$verb" tfjobs.kubeflow.org -n default; done
can "${ui[@]}" get pods --subresource=log -n default
cannot "${ui[@]}" create pods --subresource=exec -n default
can "${ui[@]}" list events -n default
cannot "${ui[@]}" create pods -n default
cannot "${ui[@]}" get pods -n team-b
cannot "${ui[@]}" create tfjobs.kubeflow.org -n team-b
cannot "${ui[@]}" get secrets/t-taas-ui-token -n taas-system
cannot "${ui[@]}" list secrets -n default
cannot "${ui[@]}" delete nodes
cannot "${ui[@]}" update tfjobs.kubeflow.org --subresource=status -n default
# Why a job waits and the queues: Kueue's and the gang schedulers' objects, read only.
sar_check true "${ui[@]}" default list kueue.x-k8s.io workloads
sar_check true "${ui[@]}" default list kueue.x-k8s.io localqueues
sar_check true "${ui[@]}" "" list kueue.x-k8s.io clusterqueues
sar_check false "${ui[@]}" "" update kueue.x-k8s.io clusterqueues
sar_check false "${ui[@]}" team-b list kueue.x-k8s.io workloads
sar_check true "${ui[@]}" default get scheduling.x-k8s.io podgroups
sar_check true "${ui[@]}" default get scheduling.volcano.sh podgroups
sar_check false "${ui[@]}" default create scheduling.x-k8s.io podgroups
scoped=(taas-team n-taas-operator)
can "${scoped[@]}" create pods -n team-a
can "${scoped[@]}" watch nodes  # cluster-scoped: its own ClusterRole, namespaced install or not
sar_check true "${scoped[@]}" team-a create scheduling.x-k8s.io podgroups
sar_check true "${scoped[@]}" team-a get scheduling.x-k8s.io podgroups
sar_check false "${scoped[@]}" team-a delete scheduling.x-k8s.io podgroups
sar_check false "${scoped[@]}" team-b create scheduling.x-k8s.io podgroups
can "${scoped[@]}" update leases.coordination.k8s.io/n-taas-operator -n taas-team
cannot "${scoped[@]}" create pods -n team-b
cannot "${scoped[@]}" list tfjobs.kubeflow.org -n default
cannot "${scoped[@]}" list tfjobs.kubeflow.org --all-namespaces
cannot "${scoped[@]}" get secrets -n team-a

# A kubeconfig holding only a token of a service account (and the cluster's CA).
write_sa_kubeconfig() { # NAMESPACE ACCOUNT FILE
  local token server
  token="$(k -n "$1" create token "$2" --duration=1h)"
  server="$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$tmp/ca.crt"
  KUBECONFIG="$3" k config set-cluster c --server="$server" --certificate-authority="$tmp/ca.crt" \
    --embed-certs >/dev/null
  KUBECONFIG="$3" k config set-credentials sa --token="$token" >/dev/null
  KUBECONFIG="$3" k config set-context c --cluster=c --user=sa >/dev/null
  KUBECONFIG="$3" k config use-context c >/dev/null
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# 4. The operator under the chart's ServiceAccount: takes a TFJob through pods + services ->
# Running -> Succeeded, with a token of that account only.
operator_scenario() { # RELEASE_NAMESPACE ACCOUNT JOB_NAMESPACE [OPERATOR FLAGS...]
  local release_ns="$1" account="$2" job_ns="$3" kubeconfig="$tmp/$2.kubeconfig" log="$tmp/$2.log"
  shift 3
  write_sa_kubeconfig "$release_ns" "$account" "$kubeconfig"
  check "$account: the kubeconfig holds the account's token, not admin's" \
    bash -c "[ \"\$(KUBECONFIG='$kubeconfig' kubectl auth whoami -o jsonpath='{.status.userInfo.username}')\" = system:serviceaccount:$release_ns:$account ]"
  # The operator's flags as the chart passes them (templates/_helpers.tpl "taas.operatorArgs"),
  # with a free port for /readyz, which answers once the leader's caches are synced.
  rm -f "$tmp/health.port"
  "$operator_binary" --kubeconfig="$kubeconfig" --workers=2 --health-address=127.0.0.1 \
    --health-port=0 --port-file="$tmp/health.port" --log-level=info --leader-elect=true \
    --lease-namespace="$release_ns" --lease-name="$account" --lease-duration-seconds=15 \
    --identity="test-$$" "$@" >"$log" 2>&1 &
  operator_pid=$!
  wait_for 60 test -s "$tmp/health.port" || die "the operator wrote no health port: $(tail "$log")"
  check "$account: operator ready (/readyz)" \
    wait_for 120 curl -fsS "http://127.0.0.1:$(cat "$tmp/health.port")/readyz"

  sed "s/namespace: default/namespace: $job_ns/" >"$tmp/job.yaml" <<'EOF'
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
  local pod before=$failures
  for pod in rbac-job-ps-0 rbac-job-worker-0 rbac-job-worker-1; do
    check "$account: pod $job_ns/$pod created" wait_for 120 k -n "$job_ns" get pod "$pod"
    check "$account: service $job_ns/$pod created" wait_for 30 k -n "$job_ns" get service "$pod"
  done
  if [ "$failures" -gt "$before" ]; then
    echo "--- $account log (tail)"
    tail -n 40 "$log"
    return
  fi
  condition() { # TYPE
    [ "$(kubectl -n "$job_ns" get tfjob rbac-job -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}")" = True ]
  }
  check "$account: TFJob status Running" wait_for 120 condition Running
  check "$account: worker 0 finishes" "$cluster" finish-pod --name "$name" "$job_ns" rbac-job-worker-0 0
  check "$account: TFJob status Succeeded" wait_for 120 condition Succeeded
  check "$account: events recorded" \
    bash -c "kubectl -n '$job_ns' get events --field-selector involvedObject.name=rbac-job -o name | grep -q ."
  check "$account: no RBAC denial in the operator's log" no_rbac_denial "$log"
  check "$account: the operator holds the chart's Lease" \
    bash -c "[ \"\$(kubectl -n '$release_ns' get lease '$account' -o jsonpath='{.spec.holderIdentity}')\" = test-$$ ]"
  if [ "$failures" -gt 0 ]; then
    echo "--- $account log (tail)"
    tail -n 40 "$log"
  fi
}
stop_operator() {
  kill "$operator_pid" 2>/dev/null || true
  wait "$operator_pid" 2>/dev/null || true
  operator_pid=""
}

# 5. The UI server under the chart's UI account, as the chart runs it.
ui_scenario() {
  local kubeconfig="$tmp/ui.kubeconfig" port
  write_sa_kubeconfig taas-system t-taas-ui "$kubeconfig"
  k -n taas-system get secret t-taas-ui-token -o jsonpath='{.data.token}' | base64 -d >"$tmp/ui-token"
  port="$(free_port)"
  mkdir -p "$tmp/assets" && echo '<!doctype html>' >"$tmp/assets/index.html"
  "$ui_binary" --kubeconfig "$kubeconfig" --namespaces default --token-file "$tmp/ui-token" \
    --listen "127.0.0.1:$port" --assets "$tmp/assets" >"$tmp/ui.log" 2>&1 &
  ui_pid=$!
  cat >"$tmp/api" <<EOF
#!/usr/bin/env bash
curl -fsS -H "Authorization: Bearer \$(cat '$tmp/ui-token')" "http://127.0.0.1:$port/api/v1/\$1"
EOF
  chmod +x "$tmp/api"
  check "UI up" wait_for 60 "$tmp/api" config
  check "UI cluster page (nodes, pods of every namespace)" bash -c "'$tmp/api' cluster | grep -q taas-node-0"
  check "UI job detail (TFJob, pods, events)" \
    bash -c "'$tmp/api' namespaces/default/tfjobs/rbac-job | grep -q rbac-job-worker-0"
  check "UI lists jobs" bash -c "'$tmp/api' namespaces/default/tfjobs | grep -q rbac-job"
  check "UI hit no RBAC denial" no_rbac_denial "$tmp/ui.log"
  if [ "$failures" -gt 0 ]; then
    echo "--- UI log (tail)"
    tail -n 20 "$tmp/ui.log"
  fi
}

if [ -z "$operator_binary" ]; then
  echo "note: taas-operator is not part of this build; the operator scenarios are skipped"
elif [ "$have_crd" != 1 ]; then
  bad "the operator scenarios need the TFJob CRD in crds/"
else
  # Release t: every namespace (ClusterRole).
  operator_scenario taas-system t-taas-operator default
  if [ -n "$ui_binary" ]; then ui_scenario; fi
  stop_operator
  # Release n: only team-a (a Role there), so the same job runs in team-a.
  operator_scenario taas-team n-taas-operator team-a --namespaces=team-a
  stop_operator
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
