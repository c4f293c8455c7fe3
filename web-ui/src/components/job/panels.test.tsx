import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { JobRow, ProgressRow } from '../../api';
import { formatMetric } from '../../logic';
import { render } from '../../testing/render';
import { ConditionsPanel, JobStats, WaitingNote } from './panels';

const job: JobRow = {
  namespace: 'default', name: 'mnist', created: '2026-11-22T00:00:00Z', ageSeconds: 3720, state: 'Running',
  reason: '', severity: 'ok', replicas: [], replicasText: 'PS 1/1 · Worker 2/2', restarts: 3, gpus: 4, progress: null,
};

const running: ProgressRow = {
  step: 12345, maxSteps: 20000, percent: 61, examplesPerSecond: null, etaSeconds: 185, eta: '3m05s', loss: 0.123456,
  accuracy: 0.9, finalMetrics: [], finalError: '', stall: '', updated: '2026-11-22T01:00:00Z',
};

test('a waiting job says why, with the detail when it says more', () => {
  const r = render(<WaitingNote waiting={{ reason: 'insufficientGpus', message: 'insufficient GPUs', detail: '0/2 nodes are available' }} />);
  assert.match(r.html, /data-reason="insufficientGpus"/);
  assert.match(r.html, /<strong>Waiting: insufficient GPUs<\/strong><br\/><small>0\/2 nodes are available<\/small>/);
  const same = render(<WaitingNote waiting={{ reason: 'unschedulable', message: 'taint', detail: 'taint' }} />);
  assert.doesNotMatch(same.html, /<small>/);
  assert.equal(render(<WaitingNote waiting={null} />).html, '');
});

test("the job's figures: replicas, GPUs, restarts, its progress, age", () => {
  const r = render(<JobStats job={{ ...job, progress: running }} />);
  assert.match(r.html, /data-testid="stat-replicas"><small>Replicas ready<\/small><strong>PS 1\/1 · Worker 2\/2/);
  assert.match(r.html, /data-testid="stat-restarts"><small>Restarts<\/small><strong>3</);
  assert.match(r.html, /data-testid="stat-progress"><small>Progress<\/small><strong>61%<\/strong><small class="muted">step 12,345 of 20,000<\/small>/);
  assert.match(r.html, /data-testid="stat-eta"><small>ETA<\/small><strong>3m05s</);
  assert.match(r.html, /data-testid="stat-step"><small>Global step<\/small><strong>12,345</);
  assert.match(r.html, /<small>Loss<\/small><strong>0.1235</);
  assert.match(r.html, /<small>Eval accuracy<\/small><strong>0.9</);
  assert.match(r.html, /<small>Age<\/small><strong>1h2m</);
  assert.doesNotMatch(r.html, /Final/);
  assert.equal(formatMetric(null), '–');
  assert.equal(formatMetric(undefined), '–');
});

test('a finished job shows each final metric; a job without progress shows dashes', () => {
  const done: ProgressRow = { ...running, step: 20000, percent: 100, etaSeconds: null, eta: '',
    finalMetrics: [{ name: 'accuracy', value: 0.90871 }, { name: 'loss', value: 0.2571 }] };
  const r = render(<JobStats job={{ ...job, state: 'Succeeded', progress: done }} />);
  assert.match(r.html, /data-testid="stat-progress"><small>Progress<\/small><strong>100%/);
  assert.match(r.html, /data-testid="stat-eta"><small>ETA<\/small><strong>–</);
  assert.match(r.html, /data-testid="stat-final-accuracy"><small>Final accuracy<\/small><strong>0.9087</);
  assert.match(r.html, /data-testid="stat-final-loss"><small>Final loss<\/small><strong>0.2571</);
  const failed = render(<JobStats job={{ ...job, state: 'Failed', progress: { ...running, finalError: 'evaluate() failed: no test set' } }} />);
  assert.match(failed.html, /data-testid="stat-final-error"><small>Final evaluation failed<\/small><strong>evaluate\(\) failed: no test set</);
  const none = render(<JobStats job={job} />);
  assert.match(none.html, /data-testid="stat-progress"><small>Progress<\/small><strong>–<\/strong><\/article>/);
  assert.match(none.html, /data-testid="stat-step"><small>Global step<\/small><strong>–</);
});

test('a stalled job says whom it waits for in place of the rate', () => {
  const stalled = render(<JobStats job={{ ...job, progress: { ...running, examplesPerSecond: null, stall: 'stalled 12s, waiting on ps-0' } }} />);
  assert.match(stalled.html, /data-testid="stat-stall"><small>Stalled<\/small><strong>stalled 12s, waiting on ps-0</);
  assert.doesNotMatch(stalled.html, /Examples\/sec/);
  const running_ = render(<JobStats job={{ ...job, progress: running }} />);
  assert.match(running_.html, /data-testid="stat-rate"><small>Examples\/sec</);
  assert.doesNotMatch(running_.html, /stat-stall/);
});

test('conditions are a timeline, oldest first', () => {
  const r = render(
    <ConditionsPanel
      conditions={[
        { type: 'Running', status: 'True', reason: 'TFJobRunning', message: 'is running', lastTransitionTime: '2026-11-22T00:02:00Z', lastUpdateTime: null },
        { type: 'Created', status: 'False', reason: 'TFJobCreated', message: '', lastTransitionTime: '2026-11-22T00:01:00Z', lastUpdateTime: null },
      ]}
    />,
  );
  assert.ok(r.html.indexOf('Created') < r.html.indexOf('Running'));
  assert.match(r.html, /<li class="off"><strong>Created/);
  assert.match(r.html, /TFJobRunning — is running/);
  assert.match(render(<ConditionsPanel conditions={[]} />).html, /has not reported on this job yet/);
});
