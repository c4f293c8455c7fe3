import { useState } from 'preact/hooks';

import { api, ConfigAnswer, JobListAnswer } from '../api';
import { JobFilters, JobsTable, matchingJobs } from '../components/jobs/JobsTable';
import { canChangeJobs } from '../logic';
import { Link, usePoll } from '../util';

export function JobsPage(props: { config: ConfigAnswer }) {
  const [namespace, setNamespace] = useState('');
  const [filter, setFilter] = useState('');
  const { data, error, reload } = usePoll(
    () => api<JobListAnswer>('GET', `tfjobs${namespace ? `?namespace=${encodeURIComponent(namespace)}` : ''}`),
    2000,
    [namespace],
  );
  const canChange = canChangeJobs(props.config);
  const rows = matchingJobs(data?.items ?? [], filter);
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
      <JobFilters
        namespaces={props.config.namespaces}
        namespace={namespace}
        onNamespace={setNamespace}
        filter={filter}
        onFilter={setFilter}
      />
      {error && <p class="error-text">Could not load jobs: {error.message}</p>}
      {!data && !error && <p aria-busy="true">Loading jobs…</p>}
      {data && rows.length === 0 && (
        <p class="muted">
          No jobs{filter.trim() ? ' match the filter' : ''}.{' '}
          {canChange && <Link href="/new">Create one.</Link>}
        </p>
      )}
      {rows.length > 0 && <JobsTable jobs={rows} canChange={canChange} onChanged={reload} />}
    </section>
  );
}
