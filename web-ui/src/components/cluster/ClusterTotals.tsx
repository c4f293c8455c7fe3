// The cluster's totals: GPUs in use (and those not every pod may take), CPU and memory
// requested, nodes.
import type { ClusterView } from '../../api';
import { gpusApartText } from '../../logic';
import { formatBytes, formatCores } from '../../logic';
import { Stat } from '../Stat';

export function ClusterTotals(props: { cluster: ClusterView }) {
  const t = props.cluster.totals;
  const apart = gpusApartText(t.gpuSlots);
  const free = <small>{t.allocatable.gpu - t.inUse.gpu} free</small>;
  return (
    <div class="stats" data-testid="cluster-totals">
      <Stat
        label="GPUs in use"
        value={`${t.inUse.gpu} / ${t.allocatable.gpu}`}
        valueTestid="gpus-in-use"
        note={
          <>
            {free}
            {apart && (
              <small class="gpus-apart" data-testid="gpus-apart">
                {apart}
              </small>
            )}
          </>
        }
      />
      <Stat
        label="CPU requested"
        value={`${formatCores(t.inUse.cpu)} / ${formatCores(t.allocatable.cpu)}`}
        note={<small>cores</small>}
      />
      <Stat label="Memory requested" value={`${formatBytes(t.inUse.memory)} / ${formatBytes(t.allocatable.memory)}`} />
      <Stat
        label="Nodes"
        value={t.nodes}
        note={<small>{props.cluster.nodes.filter((n) => n.ready).length} ready</small>}
      />
    </div>
  );
}
