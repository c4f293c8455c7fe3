import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { FormKey, JobForm } from '../../api';
import { inputEvent, named, recorder, render } from '../../testing/render';
import { FormState, LinesField, NumberField, SelectField, SwitchField, TextField } from './fields';

function state(form: JobForm, errors: [FormKey, string][] = []) {
  const set = recorder<[keyof JobForm, unknown]>();
  const s: FormState = { form, errors: new Map(errors), set: set.fn as FormState['set'] };
  return { s, calls: set.calls };
}

test('a number input shows its value and sends a number, NaN when emptied', () => {
  const { s, calls } = state({ workerReplicas: 3 });
  const r = render(<NumberField state={s} name="workerReplicas" label="Workers" hint="how many" />);
  assert.match(r.html, /value="3"/);
  assert.match(r.html, /<small>how many<\/small>/);
  const input = r.find(named('input', 'workerReplicas'));
  input.props.onInput(inputEvent({ value: '5' }));
  input.props.onInput(inputEvent({ value: '' }));
  assert.deepEqual(calls[0], ['workerReplicas', 5]);
  assert.equal(calls[1][0], 'workerReplicas');
  assert.ok(Number.isNaN(calls[1][1]));
});

test("an input shows the server's error for its key instead of its hint", () => {
  const { s } = state({ workerMemory: 'lots' }, [['workerMemory', 'workerMemory "lots" is not a Kubernetes quantity']]);
  const r = render(<TextField state={s} name="workerMemory" label="Worker memory" hint="e.g. 4Gi" />);
  assert.match(r.html, /aria-invalid="true"/);
  assert.match(r.html, /data-field-error="workerMemory"[^>]*>workerMemory &quot;lots&quot; is not a Kubernetes quantity/);
  assert.doesNotMatch(r.html, /e\.g\. 4Gi/);
});

test('a key the form leaves to the server shows empty, and typing sets it', () => {
  const { s, calls } = state({});
  const r = render(<TextField state={s} name="image" label="Container image" />);
  assert.doesNotMatch(r.html, /value="[^"]/);
  r.find(named('input', 'image')).props.onInput(inputEvent({ value: 'taas/trainer:2' }));
  assert.deepEqual(calls, [['image', 'taas/trainer:2']]);
});

test('a select offers its choices and sends the one chosen', () => {
  const { s, calls } = state({ mode: 'sync' });
  const r = render(
    <SelectField state={s} name="mode" label="Mode" choices={[['sync', 'Synchronous'], ['async', 'Asynchronous']]} />,
  );
  assert.equal(r.all((e) => e.type === 'option').length, 2);
  r.find(named('select', 'mode')).props.onChange(inputEvent({ value: 'async' }));
  assert.deepEqual(calls, [['mode', 'async']]);
});

test('a switch sends whether it is on', () => {
  const { s, calls } = state({ chief: false }, [['chief', 'chief must be true or false']]);
  const r = render(<SwitchField state={s} name="chief">Separate chief</SwitchField>);
  assert.match(r.html, /role="switch"/);
  assert.match(r.html, /chief must be true or false/);
  r.find(named('input', 'chief')).props.onChange(inputEvent({ checked: true }));
  assert.deepEqual(calls, [['chief', true]]);
});

test('a list is typed one item per line and handed back as the text', () => {
  const texts = recorder<[string]>();
  const r = render(
    <LinesField errors={new Map([['args', 'args items must not contain control characters']])} name="args" label="Arguments" text={'--a\n--b'} onInput={texts.fn} />,
  );
  assert.match(r.html, /<textarea name="args" rows="2" aria-invalid="true"/);
  r.find(named('textarea', 'args')).props.onInput(inputEvent({ value: '--c' }));
  assert.deepEqual(texts.calls, [['--c']]);
});
