import type { JobRow } from '../api';

// The job's state, coloured by severity; the tooltip gives the reason, including pod-level
// failures (OOMKilled, CrashLoopBackOff, Unschedulable) that a plain "Running" would hide.
export function StateChip(props: { job: Pick<JobRow, 'state' | 'reason' | 'severity'> }) {
  const { state, reason, severity } = props.job;
  return (
    <span
      class={`chip chip-${severity} chip-state-${state.toLowerCase()}`}
      data-tooltip={(reason || state).replace(/; | \u2014 /g, '\n')}
      data-placement="bottom"
      data-testid="state-chip"
    >
      {severity !== 'ok' && state !== 'Failed' ? `${state} ⚠` : state}
    </span>
  );
}
