// The New-job form's sections: which inputs it shows, in what words. Every input is one of the
// form's keys (fields.tsx); what a key does to the TFJob is the server's (job_form.cc).
import { isAllReduce } from '../../logic';
import { FieldHelp, FormState, LinesField, NumberField, SelectField, SwitchField, TextField } from './fields';

// The choices of the form's select inputs, each [value, text].
const STRATEGIES: [string, string][] = [
  ['parameter_server', 'Parameter servers'],
  ['collective', 'All-reduce (no parameter servers)'],
];
const MODES: [string, string][] = [
  ['sync', 'Synchronous (averaged updates)'],
  ['async', 'Asynchronous'],
];
const RESTART_POLICIES = ['OnFailure', 'ExitCode', 'Never', 'Always'].map((p): [string, string] => [p, p]);

export function IdentitySection(props: {
  state: FormState;
  namespaces: string[];
  namespace: string;
  onNamespace: (namespace: string) => void;
}) {
  const { state } = props;
  return (
    <fieldset class="grid">
      <label>
        Namespace
        <select
          name="namespace"
          value={props.namespace}
          aria-invalid={state.errors.has('namespace') ? 'true' : undefined}
          onChange={(e) => props.onNamespace((e.target as HTMLSelectElement).value)}
        >
          {props.namespaces.map((ns) => (
            <option value={ns}>{ns}</option>
          ))}
        </select>
        <FieldHelp errors={state.errors} name="namespace" />
      </label>
      <TextField state={state} name="name" label="Job name" />
    </fieldset>
  );
}

// All-reduce has no parameter servers: their inputs are hidden (and not sent: logic.ts formBody).
export function ReplicasSection({ state }: { state: FormState }) {
  const allReduce = isAllReduce(state.form);
  return (
    <fieldset>
      <legend>Replicas</legend>
      <SelectField
        state={state}
        name="strategy"
        label="Strategy"
        choices={STRATEGIES}
        hint={
          allReduce
            ? 'every worker holds the whole model; gradients are averaged across workers each step'
            : 'variables live on the parameter servers; workers pull values and push gradients'
        }
      />
      <div class="grid">
        {!allReduce && <NumberField state={state} name="psReplicas" label="Parameter servers" />}
        <NumberField state={state} name="workerReplicas" label="Workers" />
        <NumberField state={state} name="gpusPerWorker" label="GPUs per worker" />
      </div>
      <SwitchField state={state} name="chief">
        Separate chief (else worker 0 is the chief)
      </SwitchField>
      <SwitchField state={state} name="evaluator">
        Evaluator
      </SwitchField>
    </fieldset>
  );
}

export function ResourcesSection({ state }: { state: FormState }) {
  const ps = !isAllReduce(state.form);
  return (
    <fieldset>
      <legend>Resources per replica</legend>
      <div class="grid">
        <TextField state={state} name="workerCpu" label="Worker CPU" hint="cores, e.g. 2 or 500m" />
        <TextField state={state} name="workerMemory" label="Worker memory" hint="e.g. 4Gi" />
        {ps && <TextField state={state} name="psCpu" label="PS CPU" />}
        {ps && <TextField state={state} name="psMemory" label="PS memory" />}
      </div>
    </fieldset>
  );
}

// The command and arguments are typed one item per line: the page keeps the texts.
export interface ProgramTexts {
  command: string;
  args: string;
}

const LISTS: [keyof ProgramTexts, string][] = [
  ['command', 'Command (one item per line)'],
  ['args', 'Arguments (one per line)'],
];

export function ProgramSection(props: {
  state: FormState;
  texts: ProgramTexts;
  onTexts: (texts: ProgramTexts) => void;
}) {
  const { state, texts } = props;
  return (
    <fieldset>
      <legend>Program</legend>
      <TextField state={state} name="image" label="Container image" />
      <div class="grid">
        {LISTS.map(([name, label]) => (
          <LinesField
            errors={state.errors}
            name={name}
            label={label}
            text={texts[name]}
            onInput={(text) => props.onTexts({ ...texts, [name]: text })}
          />
        ))}
      </div>
    </fieldset>
  );
}

// Data from a PersistentVolumeClaim, mounted read-only in the workers, the chief and the
// evaluator (not the parameter servers, which read none); the mount path is asked only once a
// claim is named (logic.ts formBody sends neither without one).
export function DataSection({ state }: { state: FormState }) {
  const claimed = (state.form.dataClaim ?? '') !== '';
  return (
    <fieldset>
      <legend>Data</legend>
      <div class="grid">
        <TextField
          state={state}
          name="dataClaim"
          label="PersistentVolumeClaim"
          hint="empty: no data volume; the claim must exist in the job's namespace"
        />
        {claimed && (
          <TextField
            state={state}
            name="dataMountPath"
            label="Mount path"
            hint="read-only in workers, chief and evaluator; point the arguments at it"
          />
        )}
      </div>
    </fieldset>
  );
}

export function TrainingSection({ state }: { state: FormState }) {
  return (
    <fieldset>
      <legend>Training and failures</legend>
      <div class="grid">
        {!isAllReduce(state.form) && (
          <SelectField state={state} name="mode" label="Mode" choices={MODES} />
        )}
        <SelectField
          state={state}
          name="restartPolicy"
          label="Restart policy"
          choices={RESTART_POLICIES}
          hint="ExitCode restarts only transient failures (exit ≥ 128)"
        />
        <NumberField state={state} name="backoffLimit" label="Backoff limit" hint="restarts before the job fails" />
        <TextField state={state} name="priorityClassName" label="Priority class" hint="empty: the cluster's default" />
      </div>
    </fieldset>
  );
}
