import { api, Cluster, NodeRow, Queues } from '../api';
import { gpusApartText, slotClass } from '../logic';
import { formatBytes, formatCores, Link, usePoll } from '../util';

// One square per GPU, filled when a pod holds it; amber on a tainted node, grey on a cordoned one.
function GpuSlots(props: { node: NodeRow }) {
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

// Kueue's ClusterQueues: GPU quota, what admitted workloads hold, and who waits.
function QueuesSection(props: { queues: Queues }) {
  const q = props.queues;
  return (
    <>
      <h3>Queues (Kueue)</h3>
      {q.error && <p class="error-text">{q.error}</p>}
      {q.clusterQueues.length === 0 ? (
        <p class="muted">Kueue is installed but has no ClusterQueue.</p>
      ) : (
        <table data-testid="queues-table">
          <thead>
            <tr>
              <th>ClusterQueue</th>
              <th>GPUs in use / quota</th>
              <th>GPUs reserved</th>
              <th>Pending</th>
              <th>Admitted</th>
              <th>LocalQueues</th>
            </tr>
          </thead>
          <tbody>
            {q.clusterQueues.map((c) => (
              <tr data-queue={c.name}>
                <td>{c.name}</td>
                <td>
                  <span data-testid="queue-gpus">
                    {c.gpuInUse} / {c.gpuQuota}
                  </span>
                  <progress value={c.gpuInUse} max={c.gpuQuota || 1} />
                </td>
                <td>{c.gpuReserved}</td>
                <td data-testid="queue-pending">{c.pendingWorkloads}</td>
                <td>{c.admittedWorkloads}</td>
                <td>{c.localQueues.join(', ') || <span class="muted">none in these namespaces</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
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
          {gpusApartText(t.gpuSlots) && (
            <small class="gpus-apart" data-testid="gpus-apart">
              {gpusApartText(t.gpuSlots)}
            </small>
          )}
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
        ))}
      </div>

      {data.queues && <QueuesSection queues={data.queues} />}

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
