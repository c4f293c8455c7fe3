import { api, ClusterView } from '../api';
import { ClusterTotals } from '../components/cluster/ClusterTotals';
import { NodeCard } from '../components/cluster/NodeCard';
import { PendingTable, QueuesSection } from '../components/cluster/queues';
import { usePoll } from '../util';

export function ClusterPage() {
  const { data, error } = usePoll(() => api<ClusterView>('GET', 'cluster'), 2000, []);
  if (error && !data) return <p class="error-text">Could not load the cluster: {error.message}</p>;
  if (!data) return <p aria-busy="true">Loading the cluster…</p>;
  return (
    <section>
      <h2>Cluster</h2>
      <ClusterTotals cluster={data} />
      <h3>Nodes</h3>
      <div class="nodes">
        {data.nodes.map((n) => (
          <NodeCard node={n} />
        ))}
      </div>
      {data.queues && <QueuesSection queues={data.queues} />}
      <h3>Pending</h3>
      <PendingTable pending={data.pending} />
    </section>
  );
}
