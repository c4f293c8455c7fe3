import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { JobRow } from '../../api';
import { inputEvent, named, recorder, render } from '../../testing/render';
import { JobFilters, JobsTable, matchingJobs } from './JobsTable';

const job = (name: string, extra: Partial<JobRow> = {}): JobRow => ({
  namespace: 'default', name, created: '2026-11-22T00:00:00Z', ageSeconds: 90, state: 'Running', reason: '',
  severity: 'ok', replicas: [], replicasText: 'Worker 2/2', restarts: 0, gpus: 2, progress: null, ...extra,
});

test('the filter matches name, state or namespace, in any case', () => {
  const jobs = [job('mnist'), job('cifar', { state: 'Failed' }), job('bert', { namespace: 'team-b' })];
  assert.deepEqual(matchingJobs(jobs, '').map((j) => j.name), ['mnist', 'cifar', 'bert']);
  assert.deepEqual(matchingJobs(jobs, ' MNI ').map((j) => j.name), ['mnist']);
  assert.deepEqual(matchingJobs(jobs, 'failed').map((j) => j.name), ['cifar']);
  assert.deepEqual(matchingJobs(jobs, 'team-b').map((j) => j.name), ['bert']);
});

test('one row per job with its state, replicas, restarts and age; actions only where allowed', () => {
  const rows = [job('mnist', { restarts: 1, severity: 'warning', reason: 'worker-1: OOMKilled' }), job('cifar')];
  const r = render(<JobsTable jobs={rows} canChange={true} onChanged={() => {}} />);
  assert.match(r.html, /<tr data-job="mnist">/);
  assert.match(r.html, /href="\/jobs\/default\/mnist"/);
  assert.match(r.html, /data-testid="restarts"> · 1 restart</);
  assert.match(r.html, /data-tooltip="worker-1: OOMKilled"/);
  assert.match(r.html, /<td title="2026-11-22T00:00:00Z">1m<\/td>/);
  assert.equal(r.all((e) => e.props?.['data-testid'] === 'delete').length, 2);
  const readOnly = render(<JobsTable jobs={rows} canChange={false} onChanged={() => {}} />);
  assert.equal(readOnly.all((e) => e.props?.['data-testid'] === 'delete').length, 0);
});

test('each row shows its progress, time left and accuracy: the final one, else the latest muted', () => {
  const progress = { step: 2520, maxSteps: 6000, percent: 42, examplesPerSecond: 3310, etaSeconds: 65, eta: '1m05s',
    loss: 0.41, accuracy: 0.884, finalMetrics: [], finalError: '', stall: '', updated: '' };
  const done = { ...progress, step: 6000, percent: 100, etaSeconds: null, eta: '', finalMetrics: [{ name: 'accuracy', value: 0.9087 }] };
  const r = render(<JobsTable jobs={[job('mnist', { progress }), job('done', { progress: done }), job('new')]} canChange={false} onChanged={() => {}} />);
  assert.match(r.html, /<th>Progress<\/th><th>Accuracy<\/th>/);
  const cells = (testid: string) => r.all((e) => e.props?.['data-testid'] === testid);
  assert.match(r.html, /data-testid="job-progress">42%<small class="muted"> · 1m05s left<\/small><\/td>/);
  assert.match(r.html, /data-testid="job-accuracy" class="muted" title="the latest evaluation's; training has not ended">0.884</);
  assert.match(r.html, /data-testid="job-progress">100%<\/td><td data-testid="job-accuracy" data-final="true">0.9087<\/td>/);
  assert.equal(cells('job-progress').length, 3);
  assert.match(r.html, /<tr data-job="new">.*<td data-testid="job-progress"><\/td><td data-testid="job-accuracy"><\/td>/);
});

test('the filters report the namespace chosen and the text typed', () => {
  const ns = recorder<[string]>();
  const text = recorder<[string]>();
  const r = render(<JobFilters namespaces={['default', 'team-b']} namespace="" onNamespace={ns.fn} filter="" onFilter={text.fn} />);
  assert.match(r.html, /<option selected value>All namespaces<\/option><option value="default">/);
  r.find(named('select', 'namespace')).props.onChange(inputEvent({ value: 'team-b' }));
  r.find(named('input', 'filter')).props.onInput(inputEvent({ value: 'mn' }));
  assert.deepEqual(ns.calls, [['team-b']]);
  assert.deepEqual(text.calls, [['mn']]);
});
