// The job page's panels: what the job is waiting for, its figures, and the operator's conditions.
import type { ConditionRow, JobRow, MetricsPoint, Waiting } from '../../api';
import { formatAge, formatTime } from '../../logic';
import { Stat } from '../Stat';

// Why the job is not running yet, in Kubernetes' words (the detail when it says more).
export function WaitingNote(props: { waiting: Waiting | null | undefined }) {
  const w = props.waiting;
  if (!w) return null;
  return (
    <p class="reason reason-waiting" data-testid="job-waiting" data-reason={w.reason}>
      <strong>Waiting: {w.message}</strong>
      {w.detail && w.detail !== w.message && (
        <>
          <br />
          <small>{w.detail}</small>
        </>
      )}
    </p>
  );
}

// A metric as a figure: 4 significant digits, whole thousands grouped; a dash while unknown.
export function formatMetric(v: number | null | undefined, digits = 4): string {
  if (v === null || v === undefined) return '–';
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString() : Number(v.toPrecision(digits)).toString();
}

export function JobStats(props: { job: JobRow; latest: MetricsPoint | null | undefined }) {
  const { job, latest } = props;
  return (
    <div class="stats">
      <Stat label="Replicas ready" value={job.replicasText} testid="stat-replicas" wide />
      <Stat label="GPUs" value={String(job.gpus)} />
      <Stat label="Restarts" value={String(job.restarts)} testid="stat-restarts" />
      <Stat label="Global step" value={formatMetric(latest?.step)} testid="stat-step" />
      <Stat label="Examples/sec" value={formatMetric(latest?.examplesPerSecond)} />
      <Stat label="Loss" value={formatMetric(latest?.loss)} />
      <Stat label="Eval accuracy" value={formatMetric(latest?.evalAccuracy)} />
      <Stat label="Age" value={formatAge(job.ageSeconds)} />
    </div>
  );
}

// The operator's conditions as a timeline, oldest first.
export function ConditionsPanel(props: { conditions: ConditionRow[] }) {
  const sorted = [...props.conditions].sort((a, b) =>
    (a.lastTransitionTime ?? '').localeCompare(b.lastTransitionTime ?? ''),
  );
  return (
    <article>
      <header>Conditions</header>
      {sorted.length === 0 ? (
        <p class="muted">The operator has not reported on this job yet.</p>
      ) : (
        <ol class="timeline" data-testid="conditions">
          {sorted.map((c) => (
            <li class={c.status === 'True' ? 'on' : 'off'}>
              <strong>{c.type}</strong>{' '}
              <small class="muted">{formatTime(c.lastTransitionTime ?? c.lastUpdateTime ?? undefined)}</small>
              <br />
              <small>
                {c.reason}
                {c.message ? ` — ${c.message}` : ''}
              </small>
            </li>
          ))}
        </ol>
      )}
    </article>
  );
}
