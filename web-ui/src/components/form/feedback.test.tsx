import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { ClusterView } from '../../api';
import { render } from '../../testing/render';
import { CapacityHint, ErrorBanners, YamlPreview } from './feedback';

const amounts = (gpu: number) => ({ cpu: 8, memory: 2 ** 34, gpu });
const node = (name: string, ready: boolean, allocatable: number, inUse: number) => ({
  name, ready, unschedulable: false, taints: [], gpuAccess: 'open' as const, gpuNote: '',
  capacity: amounts(allocatable), allocatable: amounts(allocatable), inUse: amounts(inUse), pods: 0,
});
const count = { allocatable: 0, inUse: 0 };
const cluster: ClusterView = {
  totals: { capacity: amounts(16), allocatable: amounts(16), inUse: amounts(5), nodes: 2, gpuSlots: { open: count, tainted: count, cordoned: count } },
  nodes: [node('a', true, 8, 1), node('b', true, 8, 4)],
  pending: [],
  queues: null,
};

test("the capacity hint says what is free and what the job asks for", () => {
  const r = render(<CapacityHint cluster={cluster} form={{ workerReplicas: 3, gpusPerWorker: 2 }} />);
  assert.match(r.html, /<strong>11<\/strong> of 16 GPUs free on 2 nodes \(at most 7 free on one node\)/);
  assert.match(r.html, /asks for <strong>6<\/strong> GPUs/);
  assert.equal(render(<CapacityHint cluster={undefined} form={{}} />).html, '');
});

test('errors without an input are listed, the request message once', () => {
  const r = render(
    <ErrorBanners
      message={'tfjobs.kubeflow.org "x" already exists'}
      unplaced={[{ field: 'hostNetwork', message: 'unknown field hostNetwork' }, { field: '', message: 'the cluster is away' }]}
    />,
  );
  assert.match(r.html, /data-testid="submit-error"/);
  assert.match(r.html, /<li>hostNetwork: unknown field hostNetwork<\/li><li>the cluster is away<\/li>/);
  assert.equal(render(<ErrorBanners message="" unplaced={[]} />).html, '');
});

test('the preview shows the TFJob as YAML, and says why there is none', () => {
  const r = render(<YamlPreview tfjob={{ kind: 'TFJob', spec: { tfReplicaSpecs: { PS: { replicas: 1 } } } }} stale={false} />);
  assert.match(r.html, /kind: TFJob\nspec:\n  tfReplicaSpecs:\n    PS:\n      replicas: 1/);
  assert.match(render(<YamlPreview tfjob={null} stale={true} />).html, /class="yaml-preview stale"[^>]*>Fix the errors on the left/);
  assert.match(render(<YamlPreview tfjob={null} stale={false} />).html, />…</);
});
