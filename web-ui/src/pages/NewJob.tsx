import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import YAML from 'yaml';

import { api, ApiError, Cluster, Config, DryRun, FieldError, JobForm } from '../api';
import { FormKey as Key, fieldKey, formBody } from '../logic';
import { navigate, usePoll } from '../util';

const DEFAULTS: JobForm = {
  name: '',
  image: 'taas/trainer:latest',
  command: ['/opt/taas/bin/fashion-mnist-cnn'],
  args: [],
  strategy: 'parameter_server',
  psReplicas: 1,
  workerReplicas: 2,
  gpusPerWorker: 1,
  chief: false,
  evaluator: false,
  psCpu: '1',
  psMemory: '2Gi',
  workerCpu: '2',
  workerMemory: '4Gi',
  mode: 'sync',
  restartPolicy: 'OnFailure',
  backoffLimit: 3,
};

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
}

// What the New-job route shows in a local run instead of a form that could only fail: `taas run`
// serves the UI for its one job and cannot create others.
export function LocalRunNewJobPage() {
  return (
    <section data-testid="local-run-note">
      <h2>New training job</h2>
      <p>
        This UI is served by <code>taas run</code> for its own job, so it cannot create, clone or
        delete jobs. Start another job from its manifest on this machine, or submit it to a cluster
        running the taas operator:
      </p>
      <pre>
        <code>{'taas run job.yaml\nkubectl apply -f job.yaml'}</code>
      </pre>
      <p class="muted">
        Stop this job with Ctrl-C where <code>taas run</code> runs.
      </p>
    </section>
  );
}

export function NewJobPage(props: { config: Config }) {
  const [namespace, setNamespace] = useState(props.config.namespaces[0] ?? '');
  const [form, setForm] = useState<JobForm>({
    ...DEFAULTS,
    name: `fmnist-${Math.random().toString(36).slice(2, 7)}`,
  });
  const [commandText, setCommandText] = useState(DEFAULTS.command.join('\n'));
  const [argsText, setArgsText] = useState('--max_steps=1000');
  const [preview, setPreview] = useState<Record<string, unknown> | null>(null);
  const [liveErrors, setLiveErrors] = useState<FieldError[]>([]);
  const [submitErrors, setSubmitErrors] = useState<FieldError[] | null>(null);
  const [submitMessage, setSubmitMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const cluster = usePoll(() => api<Cluster>('GET', 'cluster'), 5000, []);

  const body = useMemo(
    () => formBody(form, lines(commandText), lines(argsText)),
    [form, commandText, argsText],
  );
  const allReduce = form.strategy === 'collective';
  const base = `namespaces/${encodeURIComponent(namespace)}/tfjobs`;

  // Live preview: the server builds and dry-runs the TFJob after each pause in typing.
  const generation = useRef(0);
  useEffect(() => {
    const mine = ++generation.current;
    const timer = window.setTimeout(async () => {
      try {
        const result = await api<DryRun>('POST', `${base}?dryRun=true`, body);
        if (mine !== generation.current) return;
        if (result.tfjob) setPreview(result.tfjob);
        setLiveErrors(result.errors);
      } catch (e) {
        if (mine !== generation.current) return;
        const err = e as ApiError;
        setLiveErrors(err.errors.length ? err.errors : [{ field: '', message: err.message }]);
      }
    }, 350);
    return () => window.clearTimeout(timer);
  }, [body, base]);

  const errors = submitErrors ?? liveErrors;
  const byKey = new Map<Key, string>();
  const unplaced: FieldError[] = [];
  for (const e of errors) {
    const key = fieldKey(e.field);
    if (key && !byKey.has(key)) byKey.set(key, e.message);
    else if (!key && e.message !== submitMessage) unplaced.push(e);  // not twice in the banners
  }

  const set = <K extends keyof JobForm>(key: K, value: JobForm[K]) => {
    setSubmitErrors(null);
    setSubmitMessage('');
    setForm((f) => ({ ...f, [key]: value }));
  };
  const invalid = (key: Key) => (byKey.has(key) ? 'true' : undefined);
  const help = (key: Key, fallback?: string) =>
    byKey.has(key) ? (
      <small class="field-error" data-field-error={key}>
        {byKey.get(key)}
      </small>
    ) : fallback ? (
      <small>{fallback}</small>
    ) : null;
  const numberInput = (key: 'psReplicas' | 'workerReplicas' | 'gpusPerWorker' | 'backoffLimit', label: string, hint?: string) => (
    <label>
      {label}
      <input
        type="number"
        name={key}
        min={0}
        value={String(form[key])}
        aria-invalid={invalid(key)}
        onInput={(e) => {
          const text = (e.target as HTMLInputElement).value;
          set(key, (text === '' ? Number.NaN : Number(text)) as never);
        }}
      />
      {help(key, hint)}
    </label>
  );
  // A choice among fixed values, each [value, text].
  const selectInput = (key: 'strategy' | 'mode' | 'restartPolicy', label: string, choices: [string, string][], hint?: string) => (
    <label>
      {label}
      <select
        name={key}
        value={form[key]}
        aria-invalid={invalid(key)}
        onChange={(e) => set(key, (e.target as HTMLSelectElement).value as never)}
      >
        {choices.map(([value, text]) => (
          <option value={value}>{text}</option>
        ))}
      </select>
      {help(key, hint)}
    </label>
  );
  const textInput = (key: 'name' | 'image' | 'psCpu' | 'psMemory' | 'workerCpu' | 'workerMemory', label: string, hint?: string) => (
    <label>
      {label}
      <input
        name={key}
        value={form[key]}
        aria-invalid={invalid(key)}
        onInput={(e) => set(key, (e.target as HTMLInputElement).value)}
      />
      {help(key, hint)}
    </label>
  );

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setSubmitMessage('');
    try {
      await api('POST', base, body);
      navigate(`/jobs/${namespace}/${form.name}`);
    } catch (err) {
      const apiError = err as ApiError;
      setSubmitErrors(
        apiError.errors.length ? apiError.errors : [{ field: apiError.field ?? '', message: apiError.message }],
      );
      setSubmitMessage(apiError.message);
    } finally {
      setBusy(false);
    }
  };

  const c = cluster.data;
  const freeGpus = c ? c.totals.allocatable.gpu - c.totals.inUse.gpu : undefined;
  const maxFreeOnNode = c
    ? Math.max(0, ...c.nodes.filter((n) => n.ready).map((n) => n.allocatable.gpu - n.inUse.gpu))
    : undefined;
  const gpusWanted = (form.gpusPerWorker || 0) * (form.workerReplicas || 0);
  // JSON.stringify first: the payload shown is exactly what is applied.
  const yaml = preview ? YAML.stringify(JSON.parse(JSON.stringify(preview))) : '';

  return (
    <section>
      <h2>New training job</h2>
      {c && (
        <p class="capacity-hint" data-testid="capacity-hint">
          <strong>{freeGpus}</strong> of {c.totals.allocatable.gpu} GPUs free on {c.totals.nodes}{' '}
          nodes (at most {maxFreeOnNode} free on one node). This job asks for{' '}
          <strong>{gpusWanted}</strong> GPUs.
        </p>
      )}
      <div class="grid new-job">
        <form onSubmit={submit} data-testid="job-form" noValidate>
          {submitMessage && (
            <p class="error-banner" role="alert" data-testid="submit-error">
              {submitMessage}
            </p>
          )}
          {unplaced.length > 0 && (
            <ul class="error-banner">
              {unplaced.map((u) => (
                <li>{u.field ? `${u.field}: ${u.message}` : u.message}</li>
              ))}
            </ul>
          )}
          <fieldset class="grid">
            <label>
              Namespace
              <select
                name="namespace"
                value={namespace}
                aria-invalid={invalid('namespace')}
                onChange={(e) => setNamespace((e.target as HTMLSelectElement).value)}
              >
                {props.config.namespaces.map((ns) => (
                  <option value={ns}>{ns}</option>
                ))}
              </select>
              {help('namespace')}
            </label>
            {textInput('name', 'Job name')}
          </fieldset>
          <fieldset>
            <legend>Replicas</legend>
            {selectInput(
              'strategy',
              'Strategy',
              [
                ['parameter_server', 'Parameter servers'],
                ['collective', 'All-reduce (no parameter servers)'],
              ],
              allReduce
                ? 'every worker holds the whole model; gradients are averaged across workers each step'
                : 'variables live on the parameter servers; workers pull values and push gradients',
            )}
            <div class="grid">
              {!allReduce && numberInput('psReplicas', 'Parameter servers')}
              {numberInput('workerReplicas', 'Workers')}
              {numberInput('gpusPerWorker', 'GPUs per worker')}
            </div>
            <label>
              <input
                type="checkbox"
                role="switch"
                name="chief"
                checked={form.chief}
                onChange={(e) => set('chief', (e.target as HTMLInputElement).checked)}
              />
              Separate chief (else worker 0 is the chief)
            </label>
            <label>
              <input
                type="checkbox"
                role="switch"
                name="evaluator"
                checked={form.evaluator}
                onChange={(e) => set('evaluator', (e.target as HTMLInputElement).checked)}
              />
              Evaluator
            </label>
          </fieldset>
          <fieldset>
            <legend>Resources per replica</legend>
            <div class="grid">
              {textInput('workerCpu', 'Worker CPU', 'cores, e.g. 2 or 500m')}
              {textInput('workerMemory', 'Worker memory', 'e.g. 4Gi')}
              {!allReduce && textInput('psCpu', 'PS CPU')}
              {!allReduce && textInput('psMemory', 'PS memory')}
            </div>
          </fieldset>
          <fieldset>
            <legend>Program</legend>
            {textInput('image', 'Container image')}
            <div class="grid">
              <label>
                Command (one item per line)
                <textarea
                  name="command"
                  rows={2}
                  value={commandText}
                  aria-invalid={invalid('command')}
                  onInput={(e) => {
                    setSubmitErrors(null);
                    setCommandText((e.target as HTMLTextAreaElement).value);
                  }}
                />
                {help('command')}
              </label>
              <label>
                Arguments (one per line)
                <textarea
                  name="args"
                  rows={2}
                  value={argsText}
                  aria-invalid={invalid('args')}
                  onInput={(e) => {
                    setSubmitErrors(null);
                    setArgsText((e.target as HTMLTextAreaElement).value);
                  }}
                />
                {help('args')}
              </label>
            </div>
          </fieldset>
          <fieldset>
            <legend>Training and failures</legend>
            <div class="grid">
              {!allReduce &&
                selectInput('mode', 'Mode', [
                  ['sync', 'Synchronous (averaged updates)'],
                  ['async', 'Asynchronous'],
                ])}
              {selectInput(
                'restartPolicy',
                'Restart policy',
                ['OnFailure', 'ExitCode', 'Never', 'Always'].map((policy): [string, string] => [policy, policy]),
                'ExitCode restarts only transient failures (exit ≥ 128)',
              )}
              {numberInput('backoffLimit', 'Backoff limit', 'restarts before the job fails')}
            </div>
          </fieldset>
          <button type="submit" aria-busy={busy ? 'true' : 'false'} disabled={busy || props.config.readOnly} data-testid="submit">
            Create job
          </button>
        </form>
        <aside>
          <h4>TFJob to be applied</h4>
          <pre class={`yaml-preview ${liveErrors.length ? 'stale' : ''}`} data-testid="yaml-preview">
            {yaml || (liveErrors.length ? 'Fix the errors on the left to see the TFJob.' : '…')}
          </pre>
        </aside>
      </div>
    </section>
  );
}
