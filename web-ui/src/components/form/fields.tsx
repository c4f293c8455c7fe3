// The New-job form's inputs: one per form key (the server's table, job_form.cc), each showing the
// first error the server placed at that key, else its hint.
import type { ComponentChildren } from 'preact';

import type { FormKey, JobForm } from '../../api';

// What every input of the form needs: the values, where to put a new one, the errors by key.
export interface FormState {
  form: JobForm;
  errors: Map<FormKey, string>;
  set: <K extends keyof JobForm>(key: K, value: JobForm[K]) => void;
}

// The form's keys whose values are of type T.
type KeysOf<T> = { [K in keyof JobForm]-?: NonNullable<JobForm[K]> extends T ? K : never }[keyof JobForm];

export function FieldHelp(props: { errors: Map<FormKey, string>; name: FormKey; hint?: string }) {
  const error = props.errors.get(props.name);
  if (error !== undefined) {
    return (
      <small class="field-error" data-field-error={props.name}>
        {error}
      </small>
    );
  }
  return props.hint ? <small>{props.hint}</small> : null;
}

function invalid(errors: Map<FormKey, string>, name: FormKey): 'true' | undefined {
  return errors.has(name) ? 'true' : undefined;
}

// An input under its label, with the key's error or hint below it.
function Labeled(props: { label: string; errors: Map<FormKey, string>; name: FormKey; hint?: string; children: ComponentChildren }) {
  return (
    <label>
      {props.label}
      {props.children}
      <FieldHelp errors={props.errors} name={props.name} hint={props.hint} />
    </label>
  );
}

// A whole number; an empty input is sent as NaN, which the server refuses by name.
export function NumberField(props: { state: FormState; name: KeysOf<number>; label: string; hint?: string }) {
  const { state, name } = props;
  return (
    <Labeled label={props.label} errors={state.errors} name={name} hint={props.hint}>
      <input
        type="number"
        name={name}
        min={0}
        value={String(state.form[name] ?? '')}
        aria-invalid={invalid(state.errors, name)}
        onInput={(e) => {
          const text = (e.target as HTMLInputElement).value;
          state.set(name, text === '' ? Number.NaN : Number(text));
        }}
      />
    </Labeled>
  );
}

export function TextField(props: { state: FormState; name: KeysOf<string>; label: string; hint?: string }) {
  const { state, name } = props;
  const set = (e: Event) => state.set(name, (e.target as HTMLInputElement).value as never);
  return (
    <Labeled label={props.label} errors={state.errors} name={name} hint={props.hint}>
      <input name={name} value={String(state.form[name] ?? '')} aria-invalid={invalid(state.errors, name)} onInput={set} />
    </Labeled>
  );
}

// A choice among fixed values, each [value, text].
export function SelectField(props: {
  state: FormState;
  name: KeysOf<string>;
  label: string;
  choices: [string, string][];
  hint?: string;
}) {
  const { state, name } = props;
  const set = (e: Event) => state.set(name, (e.target as HTMLSelectElement).value as never);
  return (
    <Labeled label={props.label} errors={state.errors} name={name} hint={props.hint}>
      <select name={name} value={String(state.form[name] ?? '')} aria-invalid={invalid(state.errors, name)} onChange={set}>
        {props.choices.map(([value, text]) => (
          <option value={value}>{text}</option>
        ))}
      </select>
    </Labeled>
  );
}

export function SwitchField(props: { state: FormState; name: KeysOf<boolean>; children: ComponentChildren }) {
  const { state, name } = props;
  return (
    <label>
      <input
        type="checkbox"
        role="switch"
        name={name}
        checked={state.form[name] ?? false}
        onChange={(e) => state.set(name, (e.target as HTMLInputElement).checked)}
      />
      {props.children}
      <FieldHelp errors={state.errors} name={name} />
    </label>
  );
}

// A list typed one item per line (the page keeps the text: the list is made when it is sent).
export function LinesField(props: {
  errors: Map<FormKey, string>;
  name: KeysOf<string[]>;
  label: string;
  text: string;
  onInput: (text: string) => void;
}) {
  return (
    <Labeled label={props.label} errors={props.errors} name={props.name}>
      <textarea
        name={props.name}
        rows={2}
        value={props.text}
        aria-invalid={invalid(props.errors, props.name)}
        onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)}
      />
    </Labeled>
  );
}
