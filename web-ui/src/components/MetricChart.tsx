import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

import type { MetricsPoint } from '../api';
import { cappedRange, smooth } from '../logic';

export { toCsv } from '../logic';

export type XAxis = 'step' | 'time';

export function MetricChart(props: {
  title: string;
  points: MetricsPoint[];
  series: { key: keyof MetricsPoint; label: string; color: string }[];
  x: XAxis;
  smoothing: number;
  logScale: boolean;
  // The most a value can be (an accuracy's 1): the linear axis ends there at the latest.
  yMax?: number;
}) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  const usable = props.points.filter((p) => (props.x === 'step' ? p.step !== null : true));
  const xs = usable.map((p) => (props.x === 'step' ? (p.step as number) : p.time / 1000));
  const data: uPlot.AlignedData = [
    xs,
    ...props.series.map((s) =>
      smooth(
        usable.map((p) => {
          const v = p[s.key];
          return typeof v === 'number' && (!props.logScale || v > 0) ? v : null;
        }),
        props.smoothing,
      ),
    ),
  ];

  useEffect(() => {
    if (!host.current) return;
    const width = Math.max(300, host.current.clientWidth);
    plot.current?.destroy();
    plot.current = new uPlot(
      {
        width,
        height: 220,
        scales: {
          x: { time: props.x === 'time' },
          y: props.logScale
            ? { distr: 3 }
            : props.yMax === undefined
              ? {}
              : { range: (_u: uPlot, min: number | null, max: number | null) => cappedRange(min, max, props.yMax as number) },
        },
        axes: [{ label: props.x === 'step' ? 'global step' : undefined }, {}],
        series: [
          props.x === 'step' ? { label: 'step' } : { label: 'time' },
          ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: true })),
        ],
      },
      data,
      host.current,
    );
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // The plot is rebuilt when its shape changes; data updates go through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.x, props.logScale, props.yMax, props.series.map((s) => s.key).join()]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      {xs.length === 0 && <p class="muted chart-empty">No samples yet.</p>}
      <div ref={host} />
    </figure>
  );
}

