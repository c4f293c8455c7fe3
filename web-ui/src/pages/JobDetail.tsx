import { useState } from 'preact/hooks';

import { api, ConfigAnswer, JobDetailAnswer, MetricsAnswer } from '../api';
import { ConditionsPanel, JobStats, WaitingNote } from '../components/job/panels';
import { ProgressPanel } from '../components/job/ProgressPanel';
import { EventsTable, ReplicasTable } from '../components/job/tables';
import { JobActions } from '../components/JobActions';
import { LogViewer } from '../components/LogViewer';
import { StateChip } from '../components/StateChip';
import { canChangeJobs } from '../logic';
import { navigate, usePoll } from '../util';

export function JobDetailPage(props: { config: ConfigAnswer; namespace: string; name: string }) {
  const base = `namespaces/${encodeURIComponent(props.namespace)}/tfjobs/${encodeURIComponent(props.name)}`;
  const detail = usePoll(() => api<JobDetailAnswer>('GET', base), 2000, [base]);
  const metrics = usePoll(() => api<MetricsAnswer>('GET', `${base}/metrics`), 5000, [base]);
  const [pod, setPod] = useState<string>();

  if (detail.error && !detail.data) {
    return (
      <section>
        <h2>{props.name}</h2>
        <p class="error-text">{detail.error.message}</p>
      </section>
    );
  }
  if (!detail.data) return <p aria-busy="true">Loading {props.name}…</p>;
  const { job, conditions, events, waiting } = detail.data;
  const pods = job.pods ?? [];
  return (
    <section>
      <div class="page-head">
        <h2>
          {job.name} <small class="muted">{job.namespace}</small>
        </h2>
        <StateChip job={job} />
        <span class="spacer" />
        <JobActions
          namespace={job.namespace}
          name={job.name}
          readOnly={!canChangeJobs(props.config)}
          onChanged={detail.reload}
          afterDelete={() => navigate('/')}
        />
      </div>
      {job.severity !== 'ok' && (
        <p class={`reason reason-${job.severity}`} data-testid="job-reason">
          {job.reason}
        </p>
      )}
      <WaitingNote waiting={waiting} />
      <JobStats job={job} />
      <div class="grid">
        <ConditionsPanel conditions={conditions} />
        <ProgressPanel points={metrics.data?.points ?? []} csvName={`${props.namespace}-${props.name}-metrics.csv`} />
      </div>
      <h3>Replicas</h3>
      <ReplicasTable replicas={pods} onLogs={setPod} />
      <h3>Logs</h3>
      <LogViewer namespace={job.namespace} job={job.name} pods={pods} selected={pod} onSelect={setPod} />
      <h3>Events</h3>
      <EventsTable events={events} />
    </section>
  );
}
