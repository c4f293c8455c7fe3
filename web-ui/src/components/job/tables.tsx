// The job page's tables: its replicas (a pod each on a cluster, a process in a local run) and
// the events about the job and them.
import type { EventRow, ReplicaRow } from '../../api';
import { devicesText, formatTime } from '../../logic';
import { Table } from '../Table';

export function ReplicasTable(props: { replicas: ReplicaRow[]; onLogs: (replica: string) => void }) {
  return (
    <>
      <div class="overflow-auto">
        <Table
          class="striped"
          testid="pods-table"
          headers={['Replica', 'Pod', 'Node', 'Phase', 'Restarts', 'Exit code', 'GPUs', 'Devices', 'Started', '']}
        >
            {props.replicas.map((p) => (
              <tr data-pod={p.name} data-phase={p.phase}>
                <td>
                  {p.replicaType}-{p.index}
                </td>
                <td>{p.name}</td>
                <td>{p.node || '–'}</td>
                <td>
                  <span class={`phase phase-${p.phase.toLowerCase()}`} data-tooltip={p.message || undefined}>
                    {p.phase}
                  </span>
                  {p.reason && <small class="pod-reason"> {p.reason}</small>}
                </td>
                <td>{p.restarts}</td>
                <td>{p.exitCode ?? '–'}</td>
                <td>{p.gpus}</td>
                <td data-testid="pod-devices">{devicesText(p.devices)}</td>
                <td>{formatTime(p.startTime)}</td>
                <td>
                  <button class="outline small" onClick={() => props.onLogs(p.name)}>
                    Logs
                  </button>
                </td>
              </tr>
            ))}
        </Table>
      </div>
      {props.replicas.length === 0 && <p class="muted">No pods yet.</p>}
    </>
  );
}

// Newest first; warnings stand out.
export function EventsTable(props: { events: EventRow[] }) {
  if (props.events.length === 0) return <p class="muted">No events.</p>;
  return (
    <div class="overflow-auto">
      <Table testid="events-table" headers={['Time', 'Type', 'Reason', 'Object', 'Message']}>
          {[...props.events].reverse().map((e) => (
            <tr class={e.type === 'Warning' ? 'warning-row' : ''}>
              <td>{formatTime(e.time)}</td>
              <td>{e.type}</td>
              <td>{e.reason}</td>
              <td>{e.object}</td>
              <td>
                {e.message}
                {e.count > 1 ? ` (×${e.count})` : ''}
              </td>
            </tr>
          ))}
      </Table>
    </div>
  );
}
