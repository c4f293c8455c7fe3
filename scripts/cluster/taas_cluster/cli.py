"""The command line of taas-cluster: the usage text, each command's arguments checked (every
argument is hostile), and the dispatch to the modules that do the work. Exit status 0 on
success, 1 on a failure (its message on standard error), 2 without a command."""

import sys

from . import gobuild, instance, nodes, pods, up
from .instance import Instance
from .layout import DEFAULT_NAME, check_name
from .parse import whole_number
from .report import Failure
from .settings import from_environment
from .supervise import pid_running

USAGE = """usage: taas-cluster COMMAND [OPTIONS]

  build                       build (or reuse) the binaries; prints the bin directory
  up   [--name N] [--nodes N] [--gpus-per-node G] [--apiserver-port P] [--owner-pid PID]
       [--coscheduler]        start a control plane with N kwok nodes (default 4, 8 GPUs each);
                              blocks until the nodes are Ready; with --owner-pid the instance
                              goes down by itself when that process exits; --coscheduler also
                              runs scheduler-plugins' gang scheduler (scripts/cluster/coscheduler)
                              as schedulerName scheduler-plugins-scheduler, with its CRDs
  env  [--name N]             print the KUBECONFIG and PATH exports for the instance
  down [--name N]             stop every process of the instance and remove its state
  status [--name N]           print the instance's processes, ports and memory
  finish-pod [--name N] [--timeout S] [--message-file F] NAMESPACE POD EXIT_CODE
                              make a pod terminate: Succeeded when EXIT_CODE is 0, else Failed;
                              F's content (4096 bytes at most) is its container's
                              termination message, as the kubelet copies it
  restart-container [--name N] [--timeout S] NAMESPACE POD EXIT_CODE
                              make the pod's container exit with EXIT_CODE and restart in place,
                              as a kubelet does under restartPolicy Always/OnFailure
  pod-log [--name N] NAMESPACE POD [LINE...]
                              append lines (else stdin) to the pod's log, as `kubectl logs` shows it
  node-down [--name N] NODE   make a node NotReady as a dead kubelet leaves it: kwok stops
                              managing it and its Ready condition turns False
  node-up [--name N] NODE     hand it back to kwok, as a node that was only cut off comes back
  kubectl [--name N] ARGS...  run the cached kubectl against the instance

The instance name defaults to "default"; state lives in ${TAAS_CLUSTER_STATE:-/tmp/taas-cluster}/NAME.
"""

MAX_NODES = 5000
MAX_GPUS_PER_NODE = 1024
MAX_PID = 1 << 22  # Linux's highest pid_max
DEFAULT_POD_TIMEOUT_S = 60
MAX_POD_TIMEOUT_S = 86400


def split_options(args, valued, flags=()):
    """({option: value}, {flag}, [the other arguments in order]) of `args`; each option in
    `valued` takes the next argument as its value, wherever it stands."""
    values, set_flags, rest = {}, set(), []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in valued:
            if i + 1 >= len(args) or not args[i + 1]:
                raise Failure(f"{arg} needs a value")
            values[arg] = args[i + 1]
            i += 2
            continue
        if arg in flags:
            set_flags.add(arg)
        else:
            rest.append(arg)
        i += 1
    return values, set_flags, rest


def number(option, text, low, high, what="a whole number"):
    value = whole_number(text, low, high)
    if value is None:
        raise Failure(f"{option} must be {what} from {low} to {high}, got '{text}'")
    return value


def parse_up(args):
    """(instance name, up.Request) of `up`'s arguments."""
    values, flags, rest = split_options(
        args, ("--name", "--nodes", "--gpus-per-node", "--apiserver-port", "--owner-pid"),
        ("--coscheduler",))
    if rest:
        raise Failure(f"up: unknown argument '{rest[0]}' (see taas-cluster --help)")
    name = check_name(values.get("--name", DEFAULT_NAME))
    request = {"coscheduler": "--coscheduler" in flags}  # the rest: up.Request's defaults
    if "--nodes" in values:
        request["nodes"] = number("--nodes", values["--nodes"], 0, MAX_NODES)
    if "--gpus-per-node" in values:
        request["gpus_per_node"] = number("--gpus-per-node", values["--gpus-per-node"], 0,
                                          MAX_GPUS_PER_NODE)
    if "--owner-pid" in values:
        owner = whole_number(values["--owner-pid"], 1, MAX_PID)
        if owner is None or not pid_running(owner):
            raise Failure(f"--owner-pid {values['--owner-pid']} is not a running process")
        request["owner_pid"] = owner
    if "--apiserver-port" in values:
        request["apiserver_port"] = number("--apiserver-port", values["--apiserver-port"], 1,
                                           65535, "a port number")
    return name, up.Request(**request)


def parse_name_only(command, args):
    values, _, rest = split_options(args, ("--name",))
    if rest:
        raise Failure(f"{command}: unknown argument '{rest[0]}'")
    return check_name(values.get("--name", DEFAULT_NAME))


def parse_pod_command(command, args):
    """(name, namespace, pod, exit code, timeout) of finish-pod and restart-container."""
    values, _, rest = split_options(args, ("--name", "--timeout"))
    if len(rest) != 3:
        raise Failure(f"usage: taas-cluster {command} [--name N] [--timeout S] NAMESPACE POD "
                      "EXIT_CODE")
    namespace, pod, code_text = rest
    code = whole_number(code_text, 0, 255)
    if code is None:
        raise Failure(f"EXIT_CODE must be an integer 0..255, got '{code_text}'")
    pods.check_object_name("namespace", namespace)
    pods.check_object_name("pod", pod)
    timeout = number("--timeout", values.get("--timeout", str(DEFAULT_POD_TIMEOUT_S)), 0,
                     MAX_POD_TIMEOUT_S, "a whole number of seconds")
    return check_name(values.get("--name", DEFAULT_NAME)), namespace, pod, code, timeout


def cmd_build(settings, args):
    if args:
        raise Failure("build takes no arguments")
    print(gobuild.build(settings))


def cmd_go(settings, _):
    """For the sibling build scripts (scripts/cluster/coscheduler, ...): one toolchain lookup."""
    print(gobuild.find_go(settings))


def cmd_up(settings, args):
    up.up(settings, *parse_up(args))


def cmd_env(settings, args):
    instance.env(Instance(settings, parse_name_only("env", args)))


def cmd_down(settings, args):
    instance.down(Instance(settings, parse_name_only("down", args)))


def cmd_status(settings, args):
    return instance.status(Instance(settings, parse_name_only("status", args)))


def cmd_finish_pod(settings, args):
    values, _, rest = split_options(args, ("--message-file",))
    name, namespace, pod, code, timeout = parse_pod_command("finish-pod", rest)
    message = pods.read_message(values["--message-file"]) if "--message-file" in values else None
    pods.finish(Instance(settings, name), namespace, pod, code, timeout, message)


def cmd_restart_container(settings, args):
    name, namespace, pod, code, timeout = parse_pod_command("restart-container", args)
    pods.restart(Instance(settings, name), namespace, pod, code, timeout)


def cmd_pod_log(settings, args):
    values, _, rest = split_options(args, ("--name",))
    if len(rest) < 2:
        raise Failure("usage: taas-cluster pod-log [--name N] NAMESPACE POD [LINE...] (else lines "
                      "from stdin)")
    namespace, pod, lines = rest[0], rest[1], rest[2:]
    pods.check_object_name("namespace", namespace)
    pods.check_object_name("pod", pod)
    pods.append_log(Instance(settings, values.get("--name", DEFAULT_NAME)), namespace, pod, lines)


def node_command(command, args):
    """(instance name, node) of `node-down`/`node-up`'s arguments."""
    values, _, rest = split_options(args, ("--name",))
    if len(rest) != 1:
        raise Failure(f"usage: taas-cluster {command} [--name N] NODE")
    pods.check_object_name("node", rest[0])
    return check_name(values.get("--name", DEFAULT_NAME)), rest[0]


def cmd_node_down(settings, args):
    name, node = node_command("node-down", args)
    nodes.down(Instance(settings, name), node)


def cmd_node_up(settings, args):
    name, node = node_command("node-up", args)
    nodes.up(Instance(settings, name), node)


def cmd_kubectl(settings, args):
    """--name only as the first argument: everything after it is kubectl's."""
    name = DEFAULT_NAME
    if args[:1] == ["--name"]:
        if len(args) < 2 or not args[1]:
            raise Failure("--name needs a value")
        name, args = args[1], args[2:]
    target = Instance(settings, name)
    target.require()
    target.kubectl.replace_process(args)


def cmd_watch(settings, args):
    """Started by `up --owner-pid` as `_watch NAME OWNER_PID STATE/` (the state folder in its
    command line marks it as the instance's process)."""
    owner = whole_number(args[1], 1, MAX_PID) if len(args) >= 2 else None
    if owner is None:
        raise Failure("usage: taas-cluster _watch NAME OWNER_PID [STATE/]")
    instance.watch(Instance(settings, args[0]), owner)


COMMANDS = {"build": cmd_build, "up": cmd_up, "env": cmd_env, "down": cmd_down,
            "status": cmd_status, "finish-pod": cmd_finish_pod,
            "restart-container": cmd_restart_container, "pod-log": cmd_pod_log,
            "node-down": cmd_node_down, "node-up": cmd_node_up,
            "kubectl": cmd_kubectl, "_watch": cmd_watch, "_go": cmd_go}


def main(argv) -> int:
    if not argv:
        sys.stderr.write(USAGE)
        return 2
    command, args = argv[0], argv[1:]
    if command in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    try:
        if command not in COMMANDS:
            sys.stderr.write(USAGE)
            raise Failure(f"unknown command '{command}'")
        return COMMANDS[command](from_environment(), args) or 0
    except (Failure, OSError) as failure:  # OSError: a file or folder it could not use
        print(f"taas-cluster: error: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
