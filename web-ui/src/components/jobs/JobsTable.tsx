// The job list: its filters and its table.
import type { JobRow } from '../../api';
import { formatAge, formatMetric, jobAccuracy, percentText } from '../../logic';
import { Link } from '../../util';
import { JobActions } from '../JobActions';
import { StateChip } from '../StateChip';
import { Table } from '../Table';

// The job list's filters: a namespace (all by default) and a text matched against name, state and
// namespace.
export function JobFilters(props: {
  namespaces: string[];
  namespace: string;
  onNamespace: (namespace: string) => void;
  filter: string;
  onFilter: (filter: string) => void;
}) {
  return (
    <div class="filters" role="group">
      <select
        name="namespace"
        aria-label="Namespace"
        value={props.namespace}
        onChange={(e) => props.onNamespace((e.target as HTMLSelectElement).value)}
      >
        <option value="">All namespaces</option>
        {props.namespaces.map((ns) => (
          <option value={ns}>{ns}</option>
        ))}
      </select>
      <input
        type="search"
        name="filter"
        placeholder="Filter by name or state"
        value={props.filter}
        onInput={(e) => props.onFilter((e.target as HTMLInputElement).value)}
      />
    </div>
  );
}

// The rows of `jobs` that `filter` (any case) matches: by name, state or namespace.
export function matchingJobs(jobs: JobRow[], filter: string): JobRow[] {
  const needle = filter.trim().toLowerCase();
  return jobs.filter(
    (j) => !needle || j.name.toLowerCase().includes(needle) || j.state.toLowerCase().includes(needle) || j.namespace.includes(needle),
  );
}

// One row per job: its state (with the reason in the tooltip), replicas ready, progress (percent
// and time left), accuracy (the final one, else the latest marked so), GPUs, age, and clone and
// delete unless the UI may not change jobs.
export function JobsTable(props: { jobs: JobRow[]; canChange: boolean; onChanged: () => void }) {
  return (
    <div class="jobs-table">
      <Table class="striped" testid="jobs-table" headers={['Name', 'Namespace', 'State', 'Replicas ready', 'Progress', 'Accuracy', 'GPUs', 'Age', '']}>
          {props.jobs.map((j) => (
            <tr data-job={j.name} key={`${j.namespace}/${j.name}`}>
              <td>
                <Link href={`/jobs/${j.namespace}/${j.name}`}>{j.name}</Link>
              </td>
              <td>{j.namespace}</td>
              <td>
                <StateChip job={j} />
              </td>
              <td class="replicas">
                {j.replicasText}
                {j.restarts > 0 && (
                  <small class="muted" data-testid="restarts">
                    {' '}
                    · {j.restarts} restart{j.restarts === 1 ? '' : 's'}
                  </small>
                )}
              </td>
              <td data-testid="job-progress">
                {percentText(j.progress)}
                {j.progress?.eta && <small class="muted"> · {j.progress.eta} left</small>}
              </td>
              <JobAccuracyCell job={j} />
              <td class="gpus">{j.gpus}</td>
              <td title={j.created}>{formatAge(j.ageSeconds)}</td>
              <td class="right">
                <JobActions namespace={j.namespace} name={j.name} readOnly={!props.canChange} onChanged={props.onChanged} />
              </td>
            </tr>
          ))}
      </Table>
    </div>
  );
}

// The final accuracy, or the latest evaluation's (muted, "latest" in its tooltip) while training.
function JobAccuracyCell(props: { job: JobRow }) {
  const accuracy = jobAccuracy(props.job.progress);
  if (!accuracy) return <td data-testid="job-accuracy" />;
  return accuracy.final ? (
    <td data-testid="job-accuracy" data-final="true">
      {formatMetric(accuracy.value)}
    </td>
  ) : (
    <td data-testid="job-accuracy" class="muted" title="the latest evaluation's; training has not ended">
      {formatMetric(accuracy.value)}
    </td>
  );
}
