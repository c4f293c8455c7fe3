// Unit tests of the front end's pure logic (web-ui/src/logic.ts), run with `node --test` from
// web-ui/ (ctest: web_ui_unit). The TypeScript is transpiled in memory with the esbuild that Vite
// ships.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';

const webUi = process.cwd();
const esbuild = createRequire(path.join(webUi, 'package.json'))('esbuild');
const { outputFiles } = esbuild.buildSync({
  entryPoints: [path.join(webUi, 'src/logic.ts')],
  format: 'esm',
  bundle: true,
  write: false,
});
const logic = await import(`data:text/javascript;base64,${Buffer.from(outputFiles[0].text).toString('base64')}`);

test('errors land next to the input the server names, the first per input; the rest above', () => {
  const { byKey, unplaced } = logic.placeErrors(
    [
      { field: 'spec.tfReplicaSpecs.Worker.replicas', message: 'workerReplicas must be between 1 and 1024', formKey: 'workerReplicas' },
      { field: 'spec.tfReplicaSpecs.Worker.replicas', message: 'a second word on workers', formKey: 'workerReplicas' },
      { field: 'hostNetwork', message: 'unknown field hostNetwork' },
      { field: '', message: 'the request failed' },
    ],
    'the request failed',
  );
  assert.deepEqual([...byKey], [['workerReplicas', 'workerReplicas must be between 1 and 1024']]);
  assert.deepEqual(unplaced, [{ field: 'hostNetwork', message: 'unknown field hostNetwork' }]);
});

test('an all-reduce form sends no parameter-server fields and no mode', () => {
  const form = { name: 'j', image: 'i', command: [], args: [], strategy: 'collective', psReplicas: 1,
    workerReplicas: 2, psCpu: '1', psMemory: '2Gi', mode: 'async' };
  const body = logic.formBody(form, ['/bin/x'], ['--a']);
  assert.deepEqual(Object.keys(body).sort(), ['args', 'command', 'image', 'name', 'strategy', 'workerReplicas']);
  assert.deepEqual(body.command, ['/bin/x']);
  const ps = logic.formBody({ ...form, strategy: 'parameter_server' }, [], []);
  assert.equal(ps.psReplicas, 1);
  assert.equal(ps.mode, 'async');
});

test('a data claim is sent with its mount path; without one neither is', () => {
  const form = { name: 'j', image: 'i', dataClaim: 'fmnist-data', dataMountPath: '/data' };
  assert.deepEqual(logic.formBody(form, [], []), { ...form, command: [], args: [] });
  const none = logic.formBody({ ...form, dataClaim: '' }, [], []);
  assert.equal('dataClaim' in none, false);
  assert.equal('dataMountPath' in none, false);
});

test('the data inputs are checked as typed: a claim name and an absolute mount path', () => {
  const errors = (dataClaim, dataMountPath) => [...logic.dataInputErrors({ dataClaim, dataMountPath }).keys()];
  assert.deepEqual(errors('', 'relative'), []); // no claim: nothing is mounted
  assert.deepEqual(errors(undefined, undefined), []);
  assert.deepEqual(errors('fmnist-data.v2', '/data'), []);
  assert.deepEqual(errors('fmnist-data', '/mnt/data/'), []);
  for (const claim of ['Data', 'my_claim', '-data', 'data-', 'a'.repeat(254), 'data claim']) {
    assert.deepEqual(errors(claim, '/data'), ['dataClaim'], claim);
  }
  for (const path of ['data', '', '/', '/data/../etc', '/data/./x', '/data//x', '/..', undefined]) {
    assert.deepEqual(errors('data', path), ['dataMountPath'], String(path));
  }
});

test('smoothing is a debiased exponential moving average that skips gaps', () => {
  assert.deepEqual(logic.smooth([1, 2, 3], 0), [1, 2, 3]);
  const s = logic.smooth([2, null, 2, 4], 0.5);
  assert.equal(s[0], 2); // debiased: the first value is kept
  assert.equal(s[1], null);
  assert.equal(s[2], 2);
  assert.ok(s[3] > 2 && s[3] < 4);
});

test('CSV export has a header and one row per point with empty cells for gaps', () => {
  const csv = logic.toCsv([
    { time: 0, step: 10, loss: 0.5, examplesPerSecond: null, learningRate: null, evalAccuracy: 0.9 },
  ]);
  const [header, row] = csv.split('\n');
  assert.equal(header, 'time,global_step,loss,examples_per_second,learning_rate,eval_accuracy');
  assert.equal(row, '1970-01-01T00:00:00.000Z,10,0.5,,,0.9');
});

test('sizes and ages read like kubectl', () => {
  assert.equal(logic.formatBytes(256 * 2 ** 30), '256 GiB');
  assert.equal(logic.formatBytes(1536), '1.5 KiB');
  assert.equal(logic.formatAge(59), '59s');
  assert.equal(logic.formatAge(3600 + 120), '1h2m');
  assert.equal(logic.formatCores(0.5), '0.50');
});

test('jobs can be created, cloned and deleted only in a writable cluster UI', () => {
  assert.equal(logic.canChangeJobs({ readOnly: false }), true);
  assert.equal(logic.canChangeJobs({ readOnly: false, localRun: false }), true);
  assert.equal(logic.canChangeJobs({ readOnly: true }), false);
  assert.equal(logic.canChangeJobs({ readOnly: false, localRun: true }), false);
});

test('GPU slots of tainted and cordoned nodes are drawn apart', () => {
  assert.equal(logic.slotClass(0, 1, 4, 'open'), 'slot used');
  assert.equal(logic.slotClass(2, 1, 4, 'open'), 'slot');
  assert.equal(logic.slotClass(5, 1, 4, 'open'), 'slot reserved');
  assert.equal(logic.slotClass(0, 1, 4, 'tainted'), 'slot used tainted');
  assert.equal(logic.slotClass(3, 1, 4, 'cordoned'), 'slot cordoned');
  assert.equal(logic.slotClass(3, 1, 4, undefined), 'slot');
});

test('the GPUs set apart are counted in words', () => {
  const none = { open: { allocatable: 16, inUse: 6 }, tainted: { allocatable: 0, inUse: 0 }, cordoned: { allocatable: 0, inUse: 0 } };
  assert.equal(logic.gpusApartText(none), '');
  assert.equal(logic.gpusApartText(undefined), '');
  assert.equal(
    logic.gpusApartText({ ...none, tainted: { allocatable: 8, inUse: 2 }, cordoned: { allocatable: 1, inUse: 0 } }),
    "8 GPUs usable only by pods that tolerate the node's taints \u00b7 1 GPU on cordoned nodes (no new pods)",
  );
});

test("a replica's devices: as reported, joined; a dash while unknown or none", () => {
  assert.equal(logic.devicesText(['cuda:0 NVIDIA H100 80GB HBM3', 'cuda:1 NVIDIA H100 80GB HBM3']),
    'cuda:0 NVIDIA H100 80GB HBM3, cuda:1 NVIDIA H100 80GB HBM3');
  assert.equal(logic.devicesText(['cpu']), 'cpu');
  assert.equal(logic.devicesText(null), '\u2013');
  assert.equal(logic.devicesText(undefined), '\u2013');
  assert.equal(logic.devicesText([]), '\u2013');
});

test("a job's accuracy is the final one once known, else the latest; its percent as text", () => {
  const progress = { step: 10, maxSteps: 40, percent: 25, examplesPerSecond: null, etaSeconds: null, eta: '', loss: null,
    accuracy: 0.8, finalMetrics: [], updated: '' };
  assert.deepEqual(logic.jobAccuracy(progress), { value: 0.8, final: false });
  assert.deepEqual(logic.jobAccuracy({ ...progress, finalMetrics: [{ name: 'loss', value: 0.2 }, { name: 'accuracy', value: 0.91 }] }),
    { value: 0.91, final: true });
  assert.equal(logic.jobAccuracy({ ...progress, accuracy: null }), null);
  assert.equal(logic.jobAccuracy(null), null);
  assert.equal(logic.percentText(progress), '25%');
  assert.equal(logic.percentText({ ...progress, percent: 0 }), '0%');
  assert.equal(logic.percentText({ ...progress, percent: null }), '');
  assert.equal(logic.percentText(undefined), '');
  assert.equal(logic.formatMetric(12345.6), '12,346');
});

test('the log viewer keeps its window by the server\'s rule: whole lines, the oldest cut behind the marker', () => {
  const max = 100;
  // Short lines that fit: as they came.
  assert.equal(logic.appendLog('a\n', 'b\n', max), 'a\nb\n');
  // A line longer than the window shows its end behind the marker; bytes are counted, not
  // characters: every cut 'é' is 2 bytes.
  const long = 'é'.repeat(300) + ' the end';
  const shown = logic.appendLog('', `${long}\nafter\n`, max);
  assert.ok(shown.length <= max, shown.length);
  assert.ok(shown.endsWith('é the end\nafter\n'), shown);
  const marker = /^\[taas: (\d+) bytes cut\] /.exec(shown);
  assert.ok(marker, shown);
  const kept = shown.slice(marker[0].length, shown.indexOf('\nafter'));
  assert.equal(Number(marker[1]) + Buffer.byteLength(kept), Buffer.byteLength(long));
  // More output cuts the same line further: its marker's count grows, never two markers.
  const later = logic.appendLog(shown, 'x'.repeat(20) + '\n', max);
  assert.equal(later.match(logic.cutMarkerPattern).length, 1);
  const again = /^\[taas: (\d+) bytes cut\] /.exec(later);
  const keptNow = later.slice(again[0].length, later.indexOf('\nafter'));
  assert.equal(Number(again[1]) + Buffer.byteLength(keptNow), Buffer.byteLength(long));
  // A window cut at a line's start needs no marker; a line with no room left goes.
  assert.equal(logic.appendLog('', '0123456789\nabc\n', 4), 'abc\n');
  assert.equal(logic.appendLog('', '0123456789\nab\n', 4), 'ab\n');
  // A surrogate pair is never split.
  const emoji = '🎉'.repeat(60);
  const cut = logic.appendLog('', `${emoji}\n`, max);
  const rest = cut.slice(cut.indexOf('] ') + 2);
  assert.ok(!/^[\udc00-\udfff]/.test(rest), rest.slice(0, 4));
  assert.equal(Number(/^\[taas: (\d+)/.exec(cut)[1]) + Buffer.byteLength(rest) - 1, Buffer.byteLength(emoji));
});

test('the cut marker the viewer shows apart is the one the server writes', () => {
  // The server's words (web-ui/server/log_window.cc CutMarker), as its tests see them.
  assert.equal(logic.cutMarker(10485760), '[taas: 10485760 bytes cut] ');
  assert.deepEqual('x[taas: 5 bytes cut] y'.split(logic.cutMarkerPattern), ['x', 'y']);
});

test('an accuracy axis ends at 1 at the latest, and starts at 0 at the lowest', () => {
  // uPlot's own padding would take 0.8..0.99 past 1 (the 1.5 the issue saw on a wider spread).
  assert.deepEqual(logic.cappedRange(0.8, 0.99, 1).map((v) => Number(v.toFixed(3))), [0.781, 1]);
  assert.deepEqual(logic.cappedRange(0.1, 1, 1).map((v) => Number(v.toFixed(3))), [0.01, 1]);
  assert.deepEqual(logic.cappedRange(0.02, 0.5, 1).map((v) => Number(v.toFixed(3))), [0, 0.548]);
  const [lo, hi] = logic.cappedRange(1, 1, 1);
  assert.ok(lo < 1 && hi === 1, `${lo} ${hi}`);
  assert.deepEqual(logic.cappedRange(null, null, 1), [0, 1]);
});
