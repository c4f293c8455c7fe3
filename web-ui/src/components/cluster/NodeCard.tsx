// A node of the cluster page: its state, its GPUs as slots (who may take them, which are used),
// and its CPU and memory in use.
import type { NodeRow } from '../../api';
import { slotClass } from '../../logic';
import { formatBytes, formatCores } from '../../logic';

// One square per GPU, filled when a pod holds it; amber on a tainted node, grey on a cordoned one.
export function GpuSlots(props: { node: NodeRow }) {
  const total = Math.max(props.node.allocatable.gpu, props.node.capacity.gpu);
  const used = props.node.inUse.gpu;
  const access = props.node.gpuAccess ?? 'open';
  return (
    <div
      class="gpu-slots"
      data-testid="gpu-slots"
      data-used={used}
      data-total={total}
      data-access={access}
      title={props.node.gpuNote || undefined}
      aria-label={`${used} of ${total} GPUs in use${props.node.gpuNote ? `, ${props.node.gpuNote}` : ''}`}
    >
      {Array.from({ length: total }, (_, i) => (
        <span class={slotClass(i, used, props.node.allocatable.gpu, access)} />
      ))}
    </div>
  );
}

function Bar(props: { label: string; used: number; total: number; format: (v: number) => string }) {
  return (
    <div class="bar">
      <small>
        {props.label}: {props.format(props.used)} / {props.format(props.total)}
      </small>
      <progress value={props.used} max={props.total || 1} />
    </div>
  );
}

export function NodeCard(props: { node: NodeRow }) {
  const n = props.node;
  return (
    <article class="node" data-node={n.name}>
      <header>
        <strong>{n.name}</strong>{' '}
        <span class={`chip ${n.ready ? 'chip-ok' : 'chip-error'}`}>{n.ready ? 'Ready' : 'NotReady'}</span>
        {n.unschedulable && <span class="chip chip-warning">cordoned</span>}
        {n.gpuAccess === 'tainted' && (
          <span class="chip chip-warning" data-tooltip={n.taints.join('\n')}>
            tainted
          </span>
        )}
        <small class="muted"> {n.pods} pods</small>
      </header>
      <small>
        GPUs {n.inUse.gpu} / {n.allocatable.gpu} used (capacity {n.capacity.gpu})
      </small>
      {n.gpuNote && (
        <small class="gpu-note" data-testid="gpu-note">
          {n.gpuNote}
        </small>
      )}
      <GpuSlots node={n} />
      <Bar label="CPU" used={n.inUse.cpu} total={n.allocatable.cpu} format={formatCores} />
      <Bar label="Memory" used={n.inUse.memory} total={n.allocatable.memory} format={formatBytes} />
      <small class="muted">
        capacity {formatCores(n.capacity.cpu)} cores, {formatBytes(n.capacity.memory)}
      </small>
    </article>
  );
}
