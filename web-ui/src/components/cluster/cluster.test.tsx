import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { ClusterView, NodeRow } from '../../api';
import { render } from '../../testing/render';
import { ClusterTotals } from './ClusterTotals';
import { GpuSlots, NodeCard } from './NodeCard';
import { PendingTable, QueuesSection } from './queues';

const amounts = (gpu: number, cpu = 32) => ({ cpu, memory: 256 * 2 ** 30, gpu });
function node(extra: Partial<NodeRow> = {}): NodeRow {
  return {
    name: 'taas-node-0', ready: true, unschedulable: false, taints: [], gpuAccess: 'open', gpuNote: '',
    capacity: amounts(8), allocatable: amounts(8), inUse: amounts(3, 4.5), pods: 2, ...extra,
  };
}

test('a node draws its GPUs as slots, used first, and says who may take them', () => {
  const open = render(<GpuSlots node={node()} />);
  assert.equal(open.all((e) => e.type === 'span' && e.props.class === 'slot used').length, 3);
  assert.equal(open.all((e) => e.type === 'span' && e.props.class === 'slot').length, 5);
  const tainted = render(
    <NodeCard node={node({ gpuAccess: 'tainted', taints: ['gpu=a100:NoSchedule'], gpuNote: 'usable only by pods that tolerate gpu=a100:NoSchedule' })} />,
  );
  assert.match(tainted.html, /<span class="chip chip-warning" data-tooltip="gpu=a100:NoSchedule">tainted<\/span>/);
  assert.match(tainted.html, /data-testid="gpu-note">usable only by pods that tolerate/);
  assert.match(tainted.html, /class="slot used tainted"/);
  const cordoned = render(<NodeCard node={node({ unschedulable: true, ready: false })} />);
  assert.match(cordoned.html, /chip-error">NotReady<\/span><span class="chip chip-warning">cordoned/);
  assert.match(render(<NodeCard node={node()} />).html, /CPU: 4.50 \/ 32/);
});

test('the totals count GPUs in use and those not every pod may take', () => {
  const count = (allocatable: number) => ({ allocatable, inUse: 0 });
  const cluster: ClusterView = {
    totals: { capacity: amounts(16), allocatable: amounts(16), inUse: amounts(6), nodes: 2, gpuSlots: { open: count(8), tainted: count(8), cordoned: count(0) } },
    nodes: [node(), node({ name: 'b', ready: false })],
    pending: [],
    queues: null,
  };
  const r = render(<ClusterTotals cluster={cluster} />);
  assert.match(r.html, /data-testid="gpus-in-use">6 \/ 16<\/strong><small>10 free<\/small>/);
  assert.match(r.html, /data-testid="gpus-apart">8 GPUs usable only by pods that tolerate/);
  assert.match(r.html, /<strong>2<\/strong><small>1 ready<\/small>/);
});

test('pending replicas link to their job and say why they wait', () => {
  const r = render(<PendingTable pending={[{ namespace: 'default', job: 'mnist', pod: 'mnist-worker-3', gpus: 8, reason: 'FailedScheduling', message: '0/2 nodes: Insufficient nvidia.com/gpu' }]} />);
  assert.match(r.html, /href="\/jobs\/default\/mnist">default\/mnist<\/a>/);
  assert.match(r.html, /<strong>FailedScheduling<\/strong> 0\/2 nodes: Insufficient nvidia.com\/gpu/);
  assert.match(render(<PendingTable pending={[]} />).html, /data-testid="no-pending"/);
});

test("Kueue's ClusterQueues: GPUs in use over quota, and who submits to them", () => {
  const r = render(
    <QueuesSection
      queues={{
        clusterQueues: [{ name: 'team-a-cq', gpuQuota: 16, gpuReserved: 8, gpuInUse: 4, pendingWorkloads: 3, reservingWorkloads: 1, admittedWorkloads: 1, localQueues: [] }],
        localQueues: [],
        error: 'cannot list Kueue\'s LocalQueues in team-b',
      }}
    />,
  );
  assert.match(r.html, /data-testid="queue-gpus">4 \/ 16/);
  assert.match(r.html, /data-testid="queue-pending">3/);
  assert.match(r.html, /none in these namespaces/);
  assert.match(r.html, /class="error-text">cannot list Kueue's LocalQueues in team-b/);
});
