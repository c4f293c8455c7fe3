import assert from 'node:assert/strict';
import { test } from 'node:test';

import { render } from '../../testing/render';
import { ProgressPanel } from './ProgressPanel';

test('the progress panel offers step or time, log scale and smoothing, and a CSV once there are points', () => {
  const empty = render(<ProgressPanel points={[]} csvName="default-mnist-metrics.csv" />);
  assert.match(empty.html, /<select name="x" aria-label="X axis"/);
  assert.match(empty.html, /Smoothing 0.60/);
  assert.match(empty.html, /<button class="outline small" disabled>CSV<\/button>/);
  assert.equal(empty.all((e) => e.props?.title === 'Loss' || e.props?.title === 'Evaluation accuracy').length, 2);

  const some = render(<ProgressPanel points={[{ time: 0, step: 1, loss: 2, examplesPerSecond: null, learningRate: null, evalAccuracy: null }]} csvName="x.csv" />);
  assert.match(some.html, /<button class="outline small">CSV<\/button>/);
});
