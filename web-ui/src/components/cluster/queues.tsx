// Kueue's queues and the replicas that wait for room, on the cluster page.
import type { PendingRow, QueuesView } from '../../api';
import { Link } from '../../util';
import { Table } from '../Table';

// Kueue's ClusterQueues: GPU quota, what admitted workloads hold, and who waits.
export function QueuesSection(props: { queues: QueuesView }) {
  const q = props.queues;
  return (
    <>
      <h3>Queues (Kueue)</h3>
      {q.error && <p class="error-text">{q.error}</p>}
      {q.clusterQueues.length === 0 ? (
        <p class="muted">Kueue is installed but has no ClusterQueue.</p>
      ) : (
        <Table
          testid="queues-table"
          headers={['ClusterQueue', 'GPUs in use / quota', 'GPUs reserved', 'Pending', 'Admitted', 'LocalQueues']}
        >
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
        </Table>
      )}
    </>
  );
}

// The replicas waiting for a node, with the scheduler's reason.
export function PendingTable(props: { pending: PendingRow[] }) {
  if (props.pending.length === 0) {
    return (
      <p class="muted" data-testid="no-pending">
        Nothing is waiting for resources.
      </p>
    );
  }
  return (
    <Table testid="pending-table" headers={['Job', 'Pod', 'GPUs', 'Why it waits']}>
        {props.pending.map((p) => (
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
    </Table>
  );
}
