#!/usr/bin/env python3
"""Offline tests of charts/taas: helm lint, and helm template for the default and non-default
values, checking what the chart promises (replicas, leader election, probes, resources, a
non-root read-only container, least-privilege RBAC with no Secret access, per-namespace Roles,
Ingress, token Secret, NOTES) and that the chart's CRDs are the ones in crds/.

usage: chart_test.py [--helm HELM] [unittest args]
Without --helm, uses the helm that scripts/setup.d/60-packaging.sh caches.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "taas"
NAMESPACED = pathlib.Path(__file__).resolve().parent / "values-namespaced.yaml"
HELM = None


def cached_helm():
    """$TAAS_CACHE/helm-<version>/helm, the version pinned in scripts/setup.d/60-packaging.sh."""
    fragment = (ROOT / "scripts" / "setup.d" / "60-packaging.sh").read_text()
    version = re.search(r"^TAAS_HELM_VERSION=(\S+)$", fragment, re.M).group(1)
    cache = os.environ.get("TAAS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "taas")
    return os.path.join(cache, f"helm-{version}", "helm")


def helm(*args, check=True):
    result = subprocess.run([HELM, *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def render(*extra, namespace="taas-system"):
    out = helm("template", "t", str(CHART), "--namespace", namespace, *extra).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def render_notes(*extra):
    """NOTES.txt as `helm install` prints it. `helm install --dry-run` needs a cluster, so this
    renders NOTES.txt with `tpl` from a template added to a copy of the chart."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "taas"
        shutil.copytree(CHART, copy, symlinks=False)
        shutil.copy(copy / "templates" / "NOTES.txt", copy / "notes-for-test.txt")
        (copy / "templates" / "notes-for-test.yaml").write_text(
            'notes: {{ tpl (.Files.Get "notes-for-test.txt") . | toJson }}\n')
        out = helm("template", "t", str(copy), "--namespace", "taas-system",
                   "--show-only", "templates/notes-for-test.yaml", *extra).stdout
        return yaml.safe_load(out)["notes"]


def find(docs, kind, name=None, namespace=None):
    found = [d for d in docs if d["kind"] == kind
             and (name is None or d["metadata"]["name"] == name)
             and (namespace is None or d["metadata"].get("namespace") == namespace)]
    return found


def one(docs, kind, name, namespace=None):
    found = find(docs, kind, name, namespace)
    assert len(found) == 1, f"expected one {kind} {name} in {namespace}, found {len(found)}"
    return found[0]


def rules_grant(rules, group, resource, verb, name=None):
    for rule in rules:
        if group in rule.get("apiGroups", []) and resource in rule.get("resources", []) \
                and verb in rule.get("verbs", []):
            names = rule.get("resourceNames")
            if not names or name in names:
                return True
    return False


def container(deployment, name):
    for c in deployment["spec"]["template"]["spec"]["containers"]:
        if c["name"] == name:
            return c
    raise AssertionError(f"no container {name}")


class RbacChecks:
    """Checks shared by every rendering: nothing grants Secrets, wildcards or escalation."""

    def assert_minimal(self, docs):
        for doc in docs:
            if doc["kind"] not in ("Role", "ClusterRole"):
                continue
            for rule in doc["rules"]:
                where = f"{doc['kind']} {doc['metadata']['name']}"
                self.assertNotIn("*", rule.get("verbs", []), where)
                self.assertNotIn("*", rule.get("resources", []), where)
                self.assertNotIn("*", rule.get("apiGroups", []), where)
                if "secrets" in rule.get("resources", []):
                    # Only the operator, only to create each job's Secret: never read one.
                    self.assertIn("operator", doc["metadata"]["name"], where)
                    self.assertEqual(rule["resources"], ["secrets"], where)
                    self.assertEqual(rule["verbs"], ["create"], where)
                self.assertNotIn("configmaps", rule.get("resources", []), where)
                for verb in ("escalate", "bind", "impersonate"):
                    self.assertNotIn(verb, rule.get("verbs", []), where)
                for resource in rule.get("resources", []):
                    self.assertNotIn(resource, ("pods/exec", "pods/attach", "nodes/proxy",
                                                "roles", "clusterroles", "rolebindings",
                                                "clusterrolebindings", "serviceaccounts/token"),
                                     where)
                if "nodes" in rule.get("resources", []):
                    self.assertEqual(sorted(rule["verbs"]), ["get", "list", "watch"], where)


class DefaultValues(unittest.TestCase, RbacChecks):
    @classmethod
    def setUpClass(cls):
        cls.docs = render()

    def test_lint(self):
        result = helm("lint", "--strict", str(CHART))
        self.assertIn("1 chart(s) linted, 0 chart(s) failed", result.stdout)

    def test_operator_deployment(self):
        d = one(self.docs, "Deployment", "t-taas-operator", "taas-system")
        self.assertEqual(d["spec"]["replicas"], 2)
        spec = d["spec"]["template"]["spec"]
        self.assertEqual(spec["serviceAccountName"], "t-taas-operator")
        self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        c = container(d, "operator")
        self.assertEqual(c["image"], "taas/operator:0.1.0")
        self.assertEqual(c["command"], ["/opt/taas/bin/taas-operator"])
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz")
        self.assertIn("cpu", c["resources"]["requests"])
        self.assertIn("memory", c["resources"]["limits"])
        self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
        self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
        self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
        args = c["args"]
        self.assertIn("--leader-elect=true", args)
        self.assertIn("--lease-name=t-taas-operator", args)  # the Lease the Role allows
        self.assertIn("--lease-namespace=$(POD_NAMESPACE)", args)
        self.assertIn("--identity=$(POD_NAME)", args)
        self.assertIn("--health-port=8081", args)
        self.assertIn("--node-failure-seconds=60", args)
        self.assertNotIn("--namespaces", args)  # every namespace
        # No gang scheduling, Kubeflow's default: podGroups is off, and a job's schedulingPolicy
        # must not send its pods to a gang scheduler the cluster may lack.
        self.assertFalse([a for a in args if a.startswith("--gang-scheduler-name")])
        one(self.docs, "PodDisruptionBudget", "t-taas-operator", "taas-system")

    def test_operator_rbac_is_cluster_wide_and_sufficient(self):
        role = one(self.docs, "ClusterRole", "taas-system-t-taas-operator")
        rules = role["rules"]
        for verb in ("get", "list", "watch", "delete"):
            self.assertTrue(rules_grant(rules, "kubeflow.org", "tfjobs", verb), verb)
        self.assertFalse(rules_grant(rules, "kubeflow.org", "tfjobs", "update"))
        self.assertTrue(rules_grant(rules, "kubeflow.org", "tfjobs/status", "update"))
        self.assertTrue(rules_grant(rules, "kubeflow.org", "tfjobs/finalizers", "update"))
        for resource in ("pods", "services"):
            for verb in ("get", "list", "watch", "create", "delete"):
                self.assertTrue(rules_grant(rules, "", resource, verb), f"{verb} {resource}")
        self.assertTrue(rules_grant(rules, "", "events", "create"))
        self.assertFalse(rules_grant(rules, "kubeflow.org", "tfjobs", "create"))
        self.assertFalse(rules_grant(rules, "", "nodes", "get"))
        self.assertFalse(rules_grant(rules, "scheduling.x-k8s.io", "podgroups", "create"))
        # Node failure (on by default): reading nodes, in a ClusterRole of its own.
        nodes = one(self.docs, "ClusterRole", "taas-system-t-taas-operator-nodes")
        for verb in ("get", "list", "watch"):
            self.assertTrue(rules_grant(nodes["rules"], "", "nodes", verb), verb)
        self.assertEqual(len(nodes["rules"]), 1)
        nodes_binding = one(self.docs, "ClusterRoleBinding", "taas-system-t-taas-operator-nodes")
        self.assertEqual(nodes_binding["roleRef"]["name"], "taas-system-t-taas-operator-nodes")
        self.assertEqual(nodes_binding["subjects"],
                         [{"kind": "ServiceAccount", "name": "t-taas-operator",
                           "namespace": "taas-system"}])
        binding = one(self.docs, "ClusterRoleBinding", "taas-system-t-taas-operator")
        self.assertEqual(binding["subjects"],
                         [{"kind": "ServiceAccount", "name": "t-taas-operator",
                           "namespace": "taas-system"}])
        lease = one(self.docs, "Role", "t-taas-operator-leader-election", "taas-system")
        self.assertTrue(rules_grant(lease["rules"], "coordination.k8s.io", "leases", "create"))
        self.assertTrue(rules_grant(lease["rules"], "coordination.k8s.io", "leases", "update",
                                    "t-taas-operator"))
        self.assertFalse(rules_grant(lease["rules"], "coordination.k8s.io", "leases", "update",
                                     "someone-elses-lease"))
        self.assertFalse(find(self.docs, "Role", "t-taas-operator"))

    def test_ui(self):
        d = one(self.docs, "Deployment", "t-taas-ui", "taas-system")
        spec = d["spec"]["template"]["spec"]
        self.assertEqual(spec["serviceAccountName"], "t-taas-ui")
        c = container(d, "ui")
        self.assertIn("--namespaces=default", c["args"])
        self.assertIn("--token-file=/etc/taas/ui-token/token", c["args"])
        self.assertNotIn("--allow-anonymous-read", c["args"])
        self.assertEqual(spec["volumes"][0]["secret"]["secretName"], "t-taas-ui-token")
        secret = one(self.docs, "Secret", "t-taas-ui-token", "taas-system")
        self.assertGreaterEqual(len(secret["data"]["token"]), 40)
        service = one(self.docs, "Service", "t-taas-ui", "taas-system")
        self.assertEqual(service["spec"]["type"], "ClusterIP")
        self.assertEqual(service["spec"]["ports"][0]["targetPort"], "http")
        self.assertFalse(find(self.docs, "Ingress"))
        role = one(self.docs, "Role", "t-taas-ui", "default")
        self.assertTrue(rules_grant(role["rules"], "kubeflow.org", "tfjobs", "create"))
        self.assertTrue(rules_grant(role["rules"], "", "pods/log", "get"))
        self.assertFalse(rules_grant(role["rules"], "", "pods", "create"))
        # Why a job waits: its Kueue Workload and its PodGroup (read only).
        self.assertTrue(rules_grant(role["rules"], "kueue.x-k8s.io", "workloads", "list"))
        self.assertTrue(rules_grant(role["rules"], "kueue.x-k8s.io", "localqueues", "list"))
        self.assertTrue(rules_grant(role["rules"], "scheduling.x-k8s.io", "podgroups", "get"))
        self.assertTrue(rules_grant(role["rules"], "scheduling.volcano.sh", "podgroups", "get"))
        self.assertFalse(rules_grant(role["rules"], "scheduling.x-k8s.io", "podgroups", "create"))
        self.assertFalse(rules_grant(role["rules"], "kueue.x-k8s.io", "workloads", "update"))
        cluster = one(self.docs, "ClusterRole", "taas-system-t-taas-ui")
        self.assertTrue(rules_grant(cluster["rules"], "", "nodes", "list"))
        self.assertTrue(rules_grant(cluster["rules"], "", "pods", "list"))
        self.assertFalse(rules_grant(cluster["rules"], "", "pods", "get"))
        self.assertTrue(rules_grant(cluster["rules"], "kueue.x-k8s.io", "clusterqueues", "list"))
        self.assertFalse(rules_grant(cluster["rules"], "kueue.x-k8s.io", "clusterqueues", "update"))

    def test_rbac_minimal(self):
        self.assert_minimal(self.docs)

    def test_every_object_is_labelled_and_namespaced(self):
        cluster_scoped = ("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition")
        for doc in self.docs:
            self.assertEqual(doc["metadata"]["labels"]["app.kubernetes.io/instance"], "t")
            if doc["kind"] not in cluster_scoped:
                self.assertIn("namespace", doc["metadata"], doc["kind"])

    def test_yaml_1_1_names_stay_strings(self):
        # Release "on" in namespace "off": YAML 1.1 readers (kubectl's and PyYAML) would take
        # both for booleans unless the chart quotes them (the same holds for "n", "y", "no").
        out = helm("template", "on", str(CHART), "--namespace", "off").stdout
        for doc in (d for d in yaml.safe_load_all(out) if d):
            meta = doc["metadata"]
            self.assertEqual(meta["labels"]["app.kubernetes.io/instance"], "on", doc["kind"])
            if "namespace" in meta:
                self.assertIn(meta["namespace"], ("off", "default"), doc["kind"])
            for subject in doc.get("subjects", []):
                self.assertEqual(subject["namespace"], "off")

    def test_notes(self):
        out = render_notes()
        self.assertIn("port-forward service/t-taas-ui 8080:80", out)
        self.assertIn("get secret t-taas-ui-token", out)
        self.assertIn("kind: TFJob", out)
        self.assertIn("image: taas/trainer:0.1.0", out)
        self.assertIn("/opt/taas/bin/fashion-mnist-cnn", out)
        self.assertIn("every namespace", out)


class NonDefaultValues(unittest.TestCase, RbacChecks):
    @classmethod
    def setUpClass(cls):
        cls.docs = render("-f", str(NAMESPACED))

    def test_lint(self):
        result = helm("lint", "--strict", str(CHART), "-f", str(NAMESPACED))
        self.assertIn("0 chart(s) failed", result.stdout)

    def test_roles_per_watched_namespace(self):
        self.assertFalse(find(self.docs, "ClusterRole", "taas-system-t-taas-operator"))
        self.assertFalse(find(self.docs, "ClusterRoleBinding", "taas-system-t-taas-operator"))
        for ns in ("team-a", "team-b"):
            role = one(self.docs, "Role", "t-taas-operator", ns)
            self.assertTrue(rules_grant(role["rules"], "", "pods", "create"))
            for group in ("scheduling.x-k8s.io", "scheduling.volcano.sh"):
                self.assertTrue(rules_grant(role["rules"], group, "podgroups", "create"), group)
            binding = one(self.docs, "RoleBinding", "t-taas-operator", ns)
            self.assertEqual(binding["subjects"][0]["namespace"], "taas-system")
        # leader election off: no Lease rights at all
        self.assertFalse(find(self.docs, "Role", "t-taas-operator-leader-election"))
        # the UI only in team-a; no cluster-wide pod reading with clusterUsage off
        one(self.docs, "Role", "t-taas-ui", "team-a")
        self.assertFalse(find(self.docs, "Role", "t-taas-ui", "team-b"))
        cluster = one(self.docs, "ClusterRole", "taas-system-t-taas-ui")
        self.assertFalse(rules_grant(cluster["rules"], "", "pods", "list"))
        # Nodes are cluster-scoped: the operator reads them through a ClusterRole even here.
        nodes = one(self.docs, "ClusterRole", "taas-system-t-taas-operator-nodes")
        self.assertTrue(rules_grant(nodes["rules"], "", "nodes", "watch"))
        one(self.docs, "ClusterRoleBinding", "taas-system-t-taas-operator-nodes")
        self.assert_minimal(self.docs)

    def test_operator(self):
        d = one(self.docs, "Deployment", "t-taas-operator", "taas-system")
        self.assertEqual(d["spec"]["replicas"], 1)
        c = container(d, "operator")
        self.assertEqual(c["image"], "registry.example.com/ml/taas-operator:1.2.3")
        self.assertEqual(c["imagePullPolicy"], "Always")
        self.assertEqual(c["ports"][0]["containerPort"], 9443)
        args = c["args"]
        self.assertIn("--namespaces=team-a,team-b", args)
        self.assertIn("--workers=8", args)
        self.assertIn("--health-port=9443", args)
        self.assertIn("--leader-elect=false", args)
        self.assertIn("--node-failure-seconds=30", args)
        self.assertFalse([a for a in args if a.startswith("--lease")])
        self.assertEqual(args[-1], "--stuck-after-seconds=600")
        self.assertEqual(d["spec"]["template"]["spec"]["imagePullSecrets"], [{"name": "regcred"}])
        self.assertFalse(find(self.docs, "PodDisruptionBudget"))

    def test_ui_with_existing_secret_and_ingress(self):
        self.assertFalse(find(self.docs, "Secret"))
        d = one(self.docs, "Deployment", "t-taas-ui", "taas-system")
        spec = d["spec"]["template"]["spec"]
        self.assertEqual(spec["volumes"][0]["secret"]["secretName"], "taas-ui-token-from-vault")
        c = container(d, "ui")
        self.assertIn("--namespaces=team-a", c["args"])
        self.assertIn("--listen=0.0.0.0:9000", c["args"])
        self.assertIn("--allow-anonymous-read", c["args"])
        ingress = one(self.docs, "Ingress", "t-taas-ui", "taas-system")
        self.assertEqual(ingress["spec"]["ingressClassName"], "nginx")
        self.assertEqual(ingress["spec"]["rules"][0]["host"], "taas.team-a.example.com")
        self.assertEqual(ingress["spec"]["tls"][0]["secretName"], "taas-tls")
        service = one(self.docs, "Service", "t-taas-ui", "taas-system")
        self.assertEqual(service["spec"]["type"], "NodePort")

    def test_notes(self):
        out = render_notes("-f", str(NAMESPACED))
        self.assertIn("open https://taas.team-a.example.com/", out)
        self.assertNotIn("port-forward", out)
        self.assertIn("get secret taas-ui-token-from-vault", out)
        self.assertIn("kubectl -n team-a apply", out)
        self.assertIn("image: registry.example.com/ml/my-trainer:7", out)
        self.assertIn("the namespaces: team-a, team-b", out)

    def test_node_failure_off(self):
        docs = render("--set", "operator.nodeFailureSeconds=0")
        operator = one(docs, "Deployment", "t-taas-operator", "taas-system")
        args = container(operator, "operator")["args"]
        self.assertIn("--node-failure-seconds=0", args)
        self.assertFalse(find(docs, "ClusterRole", "taas-system-t-taas-operator-nodes"))
        self.assertFalse(find(docs, "ClusterRoleBinding", "taas-system-t-taas-operator-nodes"))
        for doc in docs:  # off: no right on nodes anywhere but the UI's cluster page
            if doc["kind"] in ("Role", "ClusterRole") and "operator" in doc["metadata"]["name"]:
                self.assertFalse(rules_grant(doc["rules"], "", "nodes", "get"), doc["metadata"])

    def test_ui_disabled(self):
        docs = render("--set", "ui.enabled=false")
        self.assertFalse([d for d in docs if "ui" in d["metadata"]["name"]])

    def test_token_value(self):
        docs = render("--set", "ui.token.value=s3cret-token-value")
        secret = one(docs, "Secret", "t-taas-ui-token", "taas-system")
        self.assertEqual(secret["data"]["token"], "czNjcmV0LXRva2VuLXZhbHVl")


class InvalidValues(unittest.TestCase):
    def assert_fails(self, message, *args):
        result = helm("template", "t", str(CHART), *args, check=False)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(message, result.stderr)

    def test_ui_namespace_not_watched(self):
        self.assert_fails('ui.namespaces: "team-c" is not in watchNamespaces',
                          "--set", "watchNamespaces={team-a}", "--set", "ui.namespaces={team-c}")

    def test_replicas_without_leader_election(self):
        self.assert_fails("operator.replicas > 1 needs operator.leaderElection.enabled",
                          "--set", "operator.leaderElection.enabled=false")

    def test_schema_rejects_wrong_types(self):
        self.assert_fails("replicas", "--set", "operator.replicas=two")
        self.assert_fails("watchNamespaces", "--set", "watchNamespaces=team-a")
        self.assert_fails("nodeFailureSeconds", "--set", "operator.nodeFailureSeconds=-1")
        self.assert_fails("nodeFailureSeconds", "--set", "operator.nodeFailureSeconds=3601")


class Crds(unittest.TestCase):
    def test_chart_crds_are_the_repository_crds(self):
        link = CHART / "crds"
        self.assertTrue(link.is_symlink(), "charts/taas/crds must be a symlink to crds/")
        self.assertEqual(os.readlink(link), "../../crds")
        files = sorted(p for p in (ROOT / "crds").iterdir() if p.suffix in (".yaml", ".yml"))
        if not files:
            self.skipTest("crds/ has no CRD yet")
        shown = [d for d in yaml.safe_load_all(helm("show", "crds", str(CHART)).stdout) if d]
        expected = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
        self.assertEqual(shown, expected)
        names = [d["metadata"]["name"] for d in shown]
        self.assertIn("tfjobs.kubeflow.org", names)

    def test_packaged_chart_carries_the_crds(self):
        files = sorted(p for p in (ROOT / "crds").iterdir() if p.suffix in (".yaml", ".yml"))
        if not files:
            self.skipTest("crds/ has no CRD yet")
        with tempfile.TemporaryDirectory() as tmp:
            helm("package", str(CHART), "--destination", tmp)
            packaged = pathlib.Path(tmp) / "taas-0.1.0.tgz"
            shown = [d for d in yaml.safe_load_all(helm("show", "crds", str(packaged)).stdout) if d]
        self.assertIn("tfjobs.kubeflow.org", [d["metadata"]["name"] for d in shown])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--helm", default=None)
    args, rest = parser.parse_known_args()
    HELM = args.helm or cached_helm()
    if not os.access(HELM, os.X_OK):
        sys.exit(f"helm not found at {HELM}; run scripts/setup.sh")
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
