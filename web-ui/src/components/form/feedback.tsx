// What the New-job form says back: the cluster's room for the job, the errors that belong to no
// input, and the TFJob the server would apply.
import { useEffect, useRef, useState } from 'preact/hooks';
import YAML from 'yaml';

import { api, ApiError, ClusterView, DryRunAnswer, FieldError, JobForm } from '../../api';

export function CapacityHint(props: { cluster: ClusterView | undefined; form: JobForm }) {
  const c = props.cluster;
  if (!c) return null;
  const freeGpus = c.totals.allocatable.gpu - c.totals.inUse.gpu;
  const maxFreeOnNode = Math.max(0, ...c.nodes.filter((n) => n.ready).map((n) => n.allocatable.gpu - n.inUse.gpu));
  const gpusWanted = (props.form.gpusPerWorker || 0) * (props.form.workerReplicas || 0);
  return (
    <p class="capacity-hint" data-testid="capacity-hint">
      <strong>{freeGpus}</strong> of {c.totals.allocatable.gpu} GPUs free on {c.totals.nodes} nodes (at most{' '}
      {maxFreeOnNode} free on one node). This job asks for <strong>{gpusWanted}</strong> GPUs.
    </p>
  );
}

// The request's own error, and the errors no input shows (those without a form key).
export function ErrorBanners(props: { message: string; unplaced: FieldError[] }) {
  return (
    <>
      {props.message && (
        <p class="error-banner" role="alert" data-testid="submit-error">
          {props.message}
        </p>
      )}
      {props.unplaced.length > 0 && (
        <ul class="error-banner">
          {props.unplaced.map((u) => (
            <li>{u.field ? `${u.field}: ${u.message}` : u.message}</li>
          ))}
        </ul>
      )}
    </>
  );
}

export function YamlPreview(props: { tfjob: Record<string, unknown> | null; stale: boolean }) {
  // JSON.stringify first: the payload shown is exactly what is applied.
  const yaml = props.tfjob ? YAML.stringify(JSON.parse(JSON.stringify(props.tfjob))) : '';
  return (
    <aside>
      <h4>TFJob to be applied</h4>
      <pre class={`yaml-preview ${props.stale ? 'stale' : ''}`} data-testid="yaml-preview">
        {yaml || (props.stale ? 'Fix the errors on the left to see the TFJob.' : '…')}
      </pre>
    </aside>
  );
}

// The live preview: after each pause in typing, the server builds and dry-runs the TFJob of
// `body`; the last TFJob it could build, and the errors of the latest answer.
export function useDryRun(path: string, body: JobForm): { preview: Record<string, unknown> | null; errors: FieldError[] } {
  const [preview, setPreview] = useState<Record<string, unknown> | null>(null);
  const [errors, setErrors] = useState<FieldError[]>([]);
  const generation = useRef(0);
  useEffect(() => {
    const mine = ++generation.current;
    const timer = window.setTimeout(async () => {
      try {
        const result = await api<DryRunAnswer>('POST', `${path}?dryRun=true`, body);
        if (mine !== generation.current) return;
        if (result.tfjob) setPreview(result.tfjob);
        setErrors(result.errors);
      } catch (e) {
        if (mine !== generation.current) return;
        const err = e as ApiError;
        setErrors(err.errors.length ? err.errors : [{ field: '', message: err.message }]);
      }
    }, 350);
    return () => window.clearTimeout(timer);
  }, [body, path]);
  return { preview, errors };
}
