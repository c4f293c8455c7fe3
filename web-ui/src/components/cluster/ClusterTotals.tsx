// The cluster's totals: GPUs in use (and those not every pod may take), CPU and memory
// requested, nodes.
import type { ClusterView } from '../../api';
import { gpusApartText } from '../../logic';
import { formatBytes, formatCores } from '../../logic';

export function ClusterTotals(props: { cluster: ClusterView }) {
  const t = props.cluster.totals;
  const apart = gpusApartText(t.gpuSlots);
  return (
    <div class="stats" data-testid="cluster-totals">
      <article class="stat">
        <small>GPUs in use</small>
        <strong data-testid="gpus-in-use">
          {t.inUse.gpu} / {t.allocatable.gpu}
        </strong>
        <small>{t.allocatable.gpu - t.inUse.gpu} free</small>
        {apart && (
          <small class="gpus-apart" data-testid="gpus-apart">
            {apart}
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
        <small>{props.cluster.nodes.filter((n) => n.ready).length} ready</small>
      </article>
    </div>
  );
}
