import { api, Cluster, NodeRow } from '../api';
import { formatBytes, formatCores, Link, usePoll } from '../util';

// One square per GPU, filled when a pod holds it.
function GpuSlots(props: { node: NodeRow }) {
  const total = Math.max(props.node.allocatable.gpu, props.node.capacity.gpu);
  const used = props.node.inUse.gpu;
  return (
    <div class="gpu-slots" data-testid="gpu-slots" data-used={used} data-total={total} aria-label={`${used} of ${total} GPUs in use`}>
      {Array.from({ length: total }, (_, i) => (
        <span class={i < used ? 'slot used' : i < props.node.allocatable.gpu ? 'slot' : 'slot reserved'} />
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

export function ClusterPage() {
  const { data, error } = usePoll(() => api<Cluster>('GET', 'cluster'), 2000, []);
  if (error && !data) return <p class="error-text">Could not load the cluster: {error.message}</p>;
  if (!data) return <p aria-busy="true">Loading the cluster…</p>;
  const t = data.totals;
  return (
    <section>
      <h2>Cluster</h2>
      <div class="stats" data-testid="cluster-totals">
        <article class="stat">
          <small>GPUs in use</small>
          <strong data-testid="gpus-in-use">
            {t.inUse.gpu} / {t.allocatable.gpu}
          </strong>
          <small>{t.allocatable.gpu - t.inUse.gpu} free</small>
        </article>
        <article class="stat">
          <small>CPU requested</small>
          <strong>
            {formatCores(t.inUse.cpu)} / {formatCores(t.allocatable.cpu)}
          </strong>
          <small>cores</small>
        </article>
        <article class="stat">
          <small>Memory requested</small>
          <strong>
            {formatBytes(t.inUse.memory)} / {formatBytes(t.allocatable.memory)}
          </strong>
        </article>
        <article class="stat">
          <small>Nodes</small>
          <strong>{t.nodes}</strong>
          <small>{data.nodes.filter((n) => n.ready).length} ready</small>
        </article>
      </div>

      <h3>Nodes</h3>
      <div class="nodes">
        {data.nodes.map((n) => (
          <article class="node" data-node={n.name}>
            <header>
              <strong>{n.name}</strong>{' '}
              <span class={`chip ${n.ready ? 'chip-ok' : 'chip-error'}`}>{n.ready ? 'Ready' : 'NotReady'}</span>
              {n.unschedulable && <span class="chip chip-warning">cordoned</span>}
              <small class="muted"> {n.pods} pods</small>
            </header>
            <small>
              GPUs {n.inUse.gpu} / {n.allocatable.gpu} used (capacity {n.capacity.gpu})
            </small>
            <GpuSlots node={n} />
            <Bar label="CPU" used={n.inUse.cpu} total={n.allocatable.cpu} format={formatCores} />
            <Bar label="Memory" used={n.inUse.memory} total={n.allocatable.memory} format={formatBytes} />
            <small class="muted">
              capacity {formatCores(n.capacity.cpu)} cores, {formatBytes(n.capacity.memory)}
            </small>
          </article>
        ))}
      </div>

      <h3>Pending</h3>
      {data.pending.length === 0 ? (
        <p class="muted" data-testid="no-pending">
          Nothing is waiting for resources.
        </p>
      ) : (
        <table data-testid="pending-table">
          <thead>
            <tr>
              <th>Job</th>
              <th>Pod</th>
              <th>GPUs</th>
              <th>Why it waits</th>
            </tr>
          </thead>
          <tbody>
            {data.pending.map((p) => (
              <tr>
                <td>
                  <Link href={`/jobs/${p.namespace}/${p.job}`}>
                    {p.namespace}/{p.job}
                  </Link>
                </td>
                <td>{p.pod}</td>
                <td>{p.gpus}</td>
                <td>
                  <strong>{p.reason}</strong> {p.message}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
