import { useState } from 'preact/hooks';

import { api, Config, JobDetail, Metrics } from '../api';
import { JobActions } from '../components/JobActions';
import { LogViewer } from '../components/LogViewer';
import { MetricChart, toCsv, XAxis } from '../components/MetricChart';
import { StateChip } from '../components/StateChip';
import { canChangeJobs, devicesText } from '../logic';
import { formatAge, formatTime, navigate, usePoll } from '../util';

function Stat(props: { label: string; value: string; testid?: string; wide?: boolean }) {
  return (
    <article class={props.wide ? 'stat wide' : 'stat'} data-testid={props.testid}>
      <small>{props.label}</small>
      <strong>{props.value}</strong>
    </article>
  );
}

function fmt(v: number | null | undefined, digits = 4): string {
  if (v === null || v === undefined) return '–';
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString() : Number(v.toPrecision(digits)).toString();
}

export function JobDetailPage(props: { config: Config; namespace: string; name: string }) {
  const base = `namespaces/${encodeURIComponent(props.namespace)}/tfjobs/${encodeURIComponent(props.name)}`;
  const detail = usePoll(() => api<JobDetail>('GET', base), 2000, [base]);
  const metrics = usePoll(() => api<Metrics>('GET', `${base}/metrics`), 5000, [base]);
  const [x, setX] = useState<XAxis>('step');
  const [smoothing, setSmoothing] = useState(0.6);
  const [logScale, setLogScale] = useState(false);
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
  const points = metrics.data?.points ?? [];
  const latest = metrics.data?.latest;
  const sortedConditions = [...conditions].sort((a, b) =>
    (a.lastTransitionTime ?? '').localeCompare(b.lastTransitionTime ?? ''),
  );

  const exportCsv = () => {
    const blob = new Blob([toCsv(points)], { type: 'text/csv' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `${props.namespace}-${props.name}-metrics.csv`;
    a.click();
    URL.revokeObjectURL(a.href);
  };

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
      {job.severity !== 'ok' && <p class={`reason reason-${job.severity}`} data-testid="job-reason">{job.reason}</p>}
      {waiting && (
        <p class="reason reason-waiting" data-testid="job-waiting" data-reason={waiting.reason}>
          <strong>Waiting: {waiting.message}</strong>
          {waiting.detail && waiting.detail !== waiting.message && (
            <>
              <br />
              <small>{waiting.detail}</small>
            </>
          )}
        </p>
      )}
      <div class="stats">
        <Stat label="Replicas ready" value={job.replicasText} testid="stat-replicas" wide />
        <Stat label="GPUs" value={String(job.gpus)} />
        <Stat label="Restarts" value={String(job.restarts)} testid="stat-restarts" />
        <Stat label="Global step" value={fmt(latest?.step)} testid="stat-step" />
        <Stat label="Examples/sec" value={fmt(latest?.examplesPerSecond)} />
        <Stat label="Loss" value={fmt(latest?.loss)} />
        <Stat label="Eval accuracy" value={fmt(latest?.evalAccuracy)} />
        <Stat label="Age" value={formatAge(job.ageSeconds)} />
      </div>

      <div class="grid">
        <article>
          <header>Conditions</header>
          {sortedConditions.length === 0 ? (
            <p class="muted">The operator has not reported on this job yet.</p>
          ) : (
            <ol class="timeline" data-testid="conditions">
              {sortedConditions.map((c) => (
                <li class={c.status === 'True' ? 'on' : 'off'}>
                  <strong>{c.type}</strong> <small class="muted">{formatTime(c.lastTransitionTime ?? c.lastUpdateTime)}</small>
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
        <article>
          <header class="chart-controls">
            <span>Training progress</span>
            <select name="x" aria-label="X axis" value={x} onChange={(e) => setX((e.target as HTMLSelectElement).value as XAxis)}>
              <option value="step">vs step</option>
              <option value="time">vs time</option>
            </select>
            <label class="inline">
              <input type="checkbox" role="switch" checked={logScale} onChange={(e) => setLogScale((e.target as HTMLInputElement).checked)} />
              Log scale
            </label>
            <label class="inline smoothing">
              Smoothing {smoothing.toFixed(2)}
              <input type="range" min={0} max={0.99} step={0.01} value={smoothing} onInput={(e) => setSmoothing(Number((e.target as HTMLInputElement).value))} />
            </label>
            <button class="outline small" onClick={exportCsv} disabled={points.length === 0}>
              CSV
            </button>
          </header>
          <MetricChart title="Loss" points={points} x={x} smoothing={smoothing} logScale={logScale} series={[{ key: 'loss', label: 'loss', color: '#d9480f' }]} />
          <MetricChart title="Evaluation accuracy" points={points} x={x} smoothing={smoothing} logScale={logScale} series={[{ key: 'evalAccuracy', label: 'accuracy', color: '#1971c2' }]} />
        </article>
      </div>

      <h3>Replicas</h3>
      <div class="overflow-auto">
        <table class="striped" data-testid="pods-table">
          <thead>
            <tr>
              <th>Replica</th>
              <th>Pod</th>
              <th>Node</th>
              <th>Phase</th>
              <th>Restarts</th>
              <th>Exit code</th>
              <th>GPUs</th>
              <th>Devices</th>
              <th>Started</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {job.pods.map((p) => (
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
                  <button class="outline small" onClick={() => setPod(p.name)}>
                    Logs
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {job.pods.length === 0 && <p class="muted">No pods yet.</p>}

      <h3>Logs</h3>
      <LogViewer namespace={job.namespace} job={job.name} pods={job.pods} selected={pod} onSelect={setPod} />

      <h3>Events</h3>
      {events.length === 0 ? (
        <p class="muted">No events.</p>
      ) : (
        <div class="overflow-auto">
          <table data-testid="events-table">
            <thead>
              <tr>
                <th>Time</th>
                <th>Type</th>
                <th>Reason</th>
                <th>Object</th>
                <th>Message</th>
              </tr>
            </thead>
            <tbody>
              {[...events].reverse().map((e) => (
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
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
