import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { ReplicaRow } from '../../api';
import { recorder, render } from '../../testing/render';
import { EventsTable, ReplicasTable } from './tables';

const replica = (index: number, phase: string, extra: Partial<ReplicaRow> = {}): ReplicaRow => ({
  name: `mnist-worker-${index}`, replicaType: 'worker', index, node: phase === 'Pending' ? '' : 'taas-node-0', phase,
  reason: '', message: '', ready: phase === 'Running', restarts: 0, exitCode: null, gpus: 2, startTime: '', devices: null, ...extra,
});

test('one row per replica: node, phase and reason, exit code, devices; logs on request', () => {
  const logs = recorder<[string]>();
  const r = render(
    <ReplicasTable
      replicas={[
        replica(0, 'Running', { devices: ['cuda:0 NVIDIA H100 80GB HBM3'] }),
        replica(1, 'Pending', { reason: 'Unschedulable', message: '0/2 nodes are available' }),
        replica(2, 'Failed', { exitCode: 137, reason: 'OOMKilled', restarts: 2 }),
      ]}
      onLogs={logs.fn}
    />,
  );
  assert.equal(r.all((e) => e.type === 'tr' && e.props['data-pod']).length, 3);
  assert.match(r.html, /<tr data-pod="mnist-worker-0" data-phase="Running"><td>worker-0<\/td><td>mnist-worker-0<\/td><td>taas-node-0<\/td>/);
  assert.match(r.html, /data-testid="pod-devices">cuda:0 NVIDIA H100 80GB HBM3</);
  assert.match(r.html, /<td>–<\/td><td><span class="phase phase-pending" data-tooltip="0\/2 nodes are available">Pending<\/span><small class="pod-reason"> Unschedulable/);
  assert.match(r.html, /<td>2<\/td><td>137<\/td>/);
  const buttons = r.all((e) => e.type === 'button');
  buttons[1].props.onClick();
  assert.deepEqual(logs.calls, [['mnist-worker-1']]);
  assert.match(render(<ReplicasTable replicas={[]} onLogs={() => {}} />).html, /No pods yet/);
});

test('events newest first, warnings marked, repeats counted', () => {
  const r = render(
    <EventsTable
      events={[
        { type: 'Normal', reason: 'Started', message: 'started', object: 'Pod/a', count: 1, time: '2026-11-22T00:00:01Z' },
        { type: 'Warning', reason: 'BackOff', message: 'restarting', object: 'Pod/a', count: 4, time: '2026-11-22T00:00:09Z' },
      ]}
    />,
  );
  assert.ok(r.html.indexOf('BackOff') < r.html.indexOf('Started'));
  assert.match(r.html, /<tr class="warning-row">/);
  assert.match(r.html, /restarting \(×4\)/);
  assert.match(render(<EventsTable events={[]} />).html, /No events/);
});
