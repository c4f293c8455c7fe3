"""What a dead kubelet does to its node and kwok does not: the node stops reporting (kwok stops
managing it) and its Ready condition turns False (node-down); and what a node that was only cut
off does when it comes back (node-up: kwok manages it again and it turns Ready). The status patch
is pure and tested; the commands patch and report."""

import json
import time

from .instance import Instance
from .manifests import KWOK_NODE_ANNOTATION
from .report import Failure, say

# ----------------------------------------------------------------------------------------------
# pure parts


def not_ready_patch(now) -> dict:
    """The node status patch a node whose kubelet stopped ends with: Ready False, as of `now`."""
    return {"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "KubeletNotReady",
        "message": "taas-cluster node-down: the kubelet stopped", "lastHeartbeatTime": now,
        "lastTransitionTime": now}]}}


# ----------------------------------------------------------------------------------------------
# commands


def down(instance: Instance, node):
    key = KWOK_NODE_ANNOTATION.split("=")[0]
    _kubectl(instance, f"making node {node} unmanaged", "annotate", "node", node, f"{key}-")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _kubectl(instance, f"patching the status of node {node}", "patch", "node", node,
             "--subresource=status", "--type=strategic", "-p", json.dumps(not_ready_patch(now)))
    say(f"node {node} is NotReady (kwok no longer manages it)")


def up(instance: Instance, node):
    _kubectl(instance, f"handing node {node} back to kwok", "annotate", "--overwrite", "node",
             node, KWOK_NODE_ANNOTATION)
    say(f"node {node} is managed by kwok again (it turns Ready at kwok's next heartbeat)")


def _kubectl(instance: Instance, what, *args):
    instance.require()
    result = instance.kubectl.run(*args)
    if not result.ok:
        raise Failure(f"{what} failed: {result.reason()}")
