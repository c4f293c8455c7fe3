"""taas-cluster, the test control plane (docs/test-cluster.md), one job per module:

cli          the command line: usage, arguments, dispatch
settings     the environment variables, read once
up           starting an instance, component by component, with retries on a taken port
instance     one instance: health, env, status, down, the --owner-pid watchdog
pods         finish-pod, restart-container, pod-log: what a kubelet would do
coscheduler  `up --coscheduler`: the gang scheduler beside the default one
gobuild      the Go build of the binaries into the cache, and the Go toolchain
certs        the instance's CA and certificates (openssl)
kubeconfig   the kubeconfig files
ports        listening ports, who holds one, picking free ones under a lock
supervise    the components' processes: start, alive, stop
health       probes of the components and the bounded wait for one
manifests    nodes and kwok's log objects, as text
layout       where an instance keeps its state
kubectl      the cached kubectl against an instance
locks        flock between taas-cluster processes, each wait bounded
parse        checks of numbers from outside
report       messages and the Failure exception
"""
