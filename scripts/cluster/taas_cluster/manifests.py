"""The objects and configuration files an instance is made of, as text (pure): its kwok nodes,
kwok's log configuration, a pod's kwok Logs object."""

import json

NODE_LABEL_SELECTOR = "type=kwok"  # every node `up` makes carries this label
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node=fake"  # the nodes kwok manages


def node(index, gpus) -> str:
    """Node taas-node-INDEX: 32 CPUs, 256Gi, 110 pods and `gpus` nvidia.com/gpu, managed by kwok."""
    key, value = KWOK_NODE_ANNOTATION.split("=")
    label_key, label_value = NODE_LABEL_SELECTOR.split("=")
    return f"""apiVersion: v1
kind: Node
metadata:
  name: taas-node-{index}
  annotations:
    {key}: {value}
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: taas-node-{index}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    {label_key}: {label_value}
    nvidia.com/gpu.count: "{gpus}"
spec: {{}}
status:
  capacity: {{cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}
  allocatable: {{cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    kubeletVersion: fake
    kubeProxyVersion: fake
---
"""


def nodes(count, gpus) -> str:
    return "".join(node(i, gpus) for i in range(count))


def cluster_logs(all_pods_log) -> str:
    """kwok's configuration that serves `all_pods_log` as the log of every pod without its own."""
    return f"""apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: taas-all-pods
spec:
  logs:
  - logsFile: {all_pods_log}
    follow: true
"""


def pod_logs(namespace, pod, log_file) -> str:
    """The kwok Logs object that serves `log_file` as the log of pod NAMESPACE/POD (JSON, which
    kubectl apply reads: no name can break its syntax)."""
    return json.dumps({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
        "metadata": {"name": pod, "namespace": namespace},
        "spec": {"logs": [{"logsFile": str(log_file), "follow": True}]},
    })
