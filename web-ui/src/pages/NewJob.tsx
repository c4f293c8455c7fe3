import { useMemo, useState } from 'preact/hooks';

import { api, ApiError, ClusterView, ConfigAnswer, FieldError, JobForm } from '../api';
import { CapacityHint, ErrorBanners, useDryRun, YamlPreview } from '../components/form/feedback';
import { FormState } from '../components/form/fields';
import {
  DataSection,
  IdentitySection,
  ProgramSection,
  ProgramTexts,
  ReplicasSection,
  ResourcesSection,
  TrainingSection,
} from '../components/form/sections';
import { dataInputErrors, formBody, placeErrors } from '../logic';
import { navigate, usePoll } from '../util';

// What a new form holds; a key left out is the server's default (job_form.cc).
const DEFAULTS: JobForm = {
  image: 'taas/trainer:latest',
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
  dataClaim: '',
  dataMountPath: '/data',
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

export function NewJobPage(props: { config: ConfigAnswer }) {
  const [namespace, setNamespace] = useState(props.config.namespaces[0] ?? '');
  const [form, setForm] = useState<JobForm>({ ...DEFAULTS, name: `fmnist-${Math.random().toString(36).slice(2, 7)}` });
  const [texts, setTexts] = useState<ProgramTexts>({ command: '/opt/taas/bin/fashion-mnist-cnn', args: '--max_steps=1000' });
  const [submitErrors, setSubmitErrors] = useState<FieldError[] | null>(null);
  const [submitMessage, setSubmitMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const cluster = usePoll(() => api<ClusterView>('GET', 'cluster'), 5000, []);
  const body = useMemo(() => formBody(form, lines(texts.command), lines(texts.args)), [form, texts]);
  const base = `namespaces/${encodeURIComponent(namespace)}/tfjobs`;
  const live = useDryRun(base, body);
  const { byKey, unplaced } = placeErrors(submitErrors ?? live.errors, submitMessage);

  // A change makes the last submission's errors stale.
  const changed = () => {
    setSubmitErrors(null);
    setSubmitMessage('');
  };
  const state: FormState = {
    form,
    // The data inputs' own checks until the server answers for them (its word wins).
    errors: new Map([...dataInputErrors(form), ...byKey]),
    set: (key, value) => {
      changed();
      setForm((f) => ({ ...f, [key]: value }));
    },
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setSubmitMessage('');
    try {
      await api('POST', base, body);
      navigate(`/jobs/${namespace}/${form.name}`);
    } catch (err) {
      const apiError = err as ApiError;
      setSubmitErrors(apiError.errors.length ? apiError.errors : [{ field: apiError.field ?? '', message: apiError.message }]);
      setSubmitMessage(apiError.message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <h2>New training job</h2>
      <CapacityHint cluster={cluster.data} form={form} />
      <div class="grid new-job">
        <form onSubmit={submit} data-testid="job-form" noValidate>
          <ErrorBanners message={submitMessage} unplaced={unplaced} />
          <IdentitySection state={state} namespaces={props.config.namespaces} namespace={namespace} onNamespace={setNamespace} />
          <ReplicasSection state={state} />
          <ResourcesSection state={state} />
          <ProgramSection
            state={state}
            texts={texts}
            onTexts={(t) => {
              setSubmitErrors(null);
              setTexts(t);
            }}
          />
          <DataSection state={state} />
          <TrainingSection state={state} />
          <button type="submit" aria-busy={busy ? 'true' : 'false'} disabled={busy || props.config.readOnly} data-testid="submit">
            Create job
          </button>
        </form>
        <YamlPreview tfjob={live.preview} stale={live.errors.length > 0} />
      </div>
    </section>
  );
}
