// Training progress: loss and evaluation accuracy against step or time, smoothed, with a CSV of
// the points.
import { useState } from 'preact/hooks';

import type { MetricsPoint } from '../../api';
import { MetricChart, toCsv, XAxis } from '../MetricChart';

function downloadCsv(points: MetricsPoint[], file: string) {
  const blob = new Blob([toCsv(points)], { type: 'text/csv' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = file;
  a.click();
  URL.revokeObjectURL(a.href);
}

export function ProgressPanel(props: { points: MetricsPoint[]; csvName: string }) {
  const [x, setX] = useState<XAxis>('step');
  const [smoothing, setSmoothing] = useState(0.6);
  const [logScale, setLogScale] = useState(false);
  const { points } = props;
  const chart = { points, x, smoothing, logScale };
  return (
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
          <input
            type="range"
            min={0}
            max={0.99}
            step={0.01}
            value={smoothing}
            onInput={(e) => setSmoothing(Number((e.target as HTMLInputElement).value))}
          />
        </label>
        <button class="outline small" onClick={() => downloadCsv(points, props.csvName)} disabled={points.length === 0}>
          CSV
        </button>
      </header>
      <MetricChart title="Loss" {...chart} series={[{ key: 'loss', label: 'loss', color: '#d9480f' }]} />
      <MetricChart title="Evaluation accuracy" {...chart} yMax={1} series={[{ key: 'evalAccuracy', label: 'accuracy', color: '#1971c2' }]} />
    </article>
  );
}
