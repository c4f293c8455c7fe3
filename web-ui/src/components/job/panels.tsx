// The job page's panels: what the job is waiting for, its figures, and the operator's conditions.
import type { ConditionRow, JobRow, Waiting } from '../../api';
import { formatAge, formatMetric, formatTime, percentText } from '../../logic';
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

// The job's figures: its replicas and GPUs, its progress (the TFJob's status.progress, what it
// lacks from the UI's own scrape), and once training ended its final metrics, each as a figure, or
// why there are none (the chief's final evaluation failed).
export function JobStats(props: { job: JobRow }) {
  const { job } = props;
  const p = job.progress;
  const steps = p?.step !== null && p?.step !== undefined && p.maxSteps !== null ? `step ${formatMetric(p.step)} of ${formatMetric(p.maxSteps)}` : '';
  return (
    <div class="stats">
      <Stat label="Replicas ready" value={job.replicasText} testid="stat-replicas" wide />
      <Stat label="GPUs" value={String(job.gpus)} />
      <Stat label="Restarts" value={String(job.restarts)} testid="stat-restarts" />
      <Stat
        label="Progress"
        value={percentText(p) || '–'}
        testid="stat-progress"
        note={steps && <small class="muted">{steps}</small>}
      />
      <Stat label="ETA" value={p?.eta || '–'} testid="stat-eta" />
      <Stat label="Global step" value={formatMetric(p?.step)} testid="stat-step" />
      {p?.stall ? (
        <Stat label="Stalled" value={p.stall} testid="stat-stall" wide />
      ) : (
        <Stat label="Examples/sec" value={formatMetric(p?.examplesPerSecond)} testid="stat-rate" />
      )}
      <Stat label="Loss" value={formatMetric(p?.loss)} />
      <Stat label="Eval accuracy" value={formatMetric(p?.accuracy)} />
      {p?.finalMetrics.map((m) => (
        <Stat label={`Final ${m.name}`} value={formatMetric(m.value)} testid={`stat-final-${m.name}`} />
      ))}
      {p?.finalError && <Stat label="Final evaluation failed" value={p.finalError} testid="stat-final-error" wide />}
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
