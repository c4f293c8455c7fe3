import { useState } from 'preact/hooks';

import { api, Config, JobRow } from '../api';
import { JobActions } from '../components/JobActions';
import { StateChip } from '../components/StateChip';
import { canChangeJobs } from '../logic';
import { formatAge, Link, usePoll } from '../util';

export function JobsPage(props: { config: Config }) {
  const [namespace, setNamespace] = useState('');
  const [filter, setFilter] = useState('');
  const { data, error, reload } = usePoll(
    () =>
      api<{ items: JobRow[] }>(
        'GET',
        `tfjobs${namespace ? `?namespace=${encodeURIComponent(namespace)}` : ''}`,
      ),
    2000,
    [namespace],
  );
  const canChange = canChangeJobs(props.config);
  const needle = filter.trim().toLowerCase();
  const rows = (data?.items ?? []).filter(
    (j) =>
      !needle ||
      j.name.toLowerCase().includes(needle) ||
      j.state.toLowerCase().includes(needle) ||
      j.namespace.includes(needle),
  );
  return (
    <section>
      <div class="page-head">
        <h2>Training jobs</h2>
        {canChange && (
          <Link href="/new" class="button-link">
            New job
          </Link>
        )}
      </div>
      <div class="filters" role="group">
        <select
          name="namespace"
          aria-label="Namespace"
          value={namespace}
          onChange={(e) => setNamespace((e.target as HTMLSelectElement).value)}
        >
          <option value="">All namespaces</option>
          {props.config.namespaces.map((ns) => (
            <option value={ns}>{ns}</option>
          ))}
        </select>
        <input
          type="search"
          name="filter"
          placeholder="Filter by name or state"
          value={filter}
          onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
        />
      </div>
      {error && <p class="error-text">Could not load jobs: {error.message}</p>}
      {!data && !error && <p aria-busy="true">Loading jobs…</p>}
      {data && rows.length === 0 && (
        <p class="muted">
          No jobs{needle ? ' match the filter' : ''}.{' '}
          {canChange && <Link href="/new">Create one.</Link>}
        </p>
      )}
      {rows.length > 0 && (
        <div class="jobs-table">
          <table class="striped" data-testid="jobs-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Namespace</th>
                <th>State</th>
                <th>Replicas ready</th>
                <th>GPUs</th>
                <th>Age</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.map((j) => (
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
                  <td>{j.gpus}</td>
                  <td title={j.created}>{formatAge(j.ageSeconds)}</td>
                  <td class="right">
                    <JobActions
                      namespace={j.namespace}
                      name={j.name}
                      readOnly={!canChange}
                      onChanged={reload}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
