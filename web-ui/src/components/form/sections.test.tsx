import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { FormKey, JobForm } from '../../api';
import { inputEvent, named, recorder, render } from '../../testing/render';
import type { FormState } from './fields';
import { DataSection, IdentitySection, ProgramSection, ReplicasSection, ResourcesSection, TrainingSection } from './sections';

function state(form: JobForm, errors: [FormKey, string][] = []): FormState {
  return { form, errors: new Map(errors), set: () => {} };
}

const psInputs = ['psReplicas', 'psCpu', 'psMemory'];

test('parameter servers show their inputs; all-reduce hides them and the mode', () => {
  const ps = state({ strategy: 'parameter_server', psReplicas: 1, mode: 'sync' });
  const shown = [ReplicasSection, ResourcesSection, TrainingSection].map((S) => render(<S state={ps} />).html).join('');
  for (const name of psInputs) assert.match(shown, new RegExp(`name="${name}"`));
  assert.match(shown, /<select name="mode"/);
  assert.match(shown, /workers pull values and push gradients/);

  const allReduce = state({ strategy: 'collective' });
  const hidden = [ReplicasSection, ResourcesSection, TrainingSection].map((S) => render(<S state={allReduce} />).html).join('');
  for (const name of [...psInputs, 'mode']) assert.doesNotMatch(hidden, new RegExp(`name="${name}"`));
  assert.match(hidden, /gradients are averaged across workers/);
  assert.match(hidden, /name="workerReplicas"/);
});

test('the namespace is chosen among the served ones, and its errors shown beside it', () => {
  const chosen = recorder<[string]>();
  const r = render(
    <IdentitySection
      state={state({ name: 'j' }, [['namespace', 'namespace "x" is not served by this UI']])}
      namespaces={['default', 'team-b']}
      namespace="team-b"
      onNamespace={chosen.fn}
    />,
  );
  assert.equal(r.all((e) => e.type === 'option').length, 2);
  assert.match(r.html, /data-field-error="namespace"/);
  assert.match(r.html, /name="name" value="j"/);
  r.find(named('select', 'namespace')).props.onChange(inputEvent({ value: 'default' }));
  assert.deepEqual(chosen.calls, [['default']]);
});

test('the program section hands back the command and argument texts as typed', () => {
  const texts = recorder<[{ command: string; args: string }]>();
  const r = render(
    <ProgramSection state={state({ image: 'taas/trainer:1' })} texts={{ command: '/bin/train', args: '' }} onTexts={texts.fn} />,
  );
  assert.match(r.html, /name="image" value="taas\/trainer:1"/);
  r.find(named('textarea', 'args')).props.onInput(inputEvent({ value: '--steps=5\n' }));
  assert.deepEqual(texts.calls, [[{ command: '/bin/train', args: '--steps=5\n' }]]);
});

test('the restart policies are offered with ExitCode explained', () => {
  const r = render(<TrainingSection state={state({ restartPolicy: 'ExitCode' })} />);
  assert.deepEqual(
    r.all((e) => e.type === 'option' && ['OnFailure', 'ExitCode', 'Never', 'Always'].includes(e.props.value)).map((e) => e.props.value),
    ['OnFailure', 'ExitCode', 'Never', 'Always'],
  );
  assert.match(r.html, /exit ≥ 128/);
});

test('the data section asks for a mount path once a claim is named, and shows its errors', () => {
  const none = render(<DataSection state={state({ dataClaim: '', dataMountPath: '/data' })} />);
  assert.match(none.html, /name="dataClaim"/);
  assert.doesNotMatch(none.html, /name="dataMountPath"/);
  assert.match(none.html, /empty: no data volume/);

  const claimed = render(
    <DataSection
      state={state({ dataClaim: 'fmnist-data', dataMountPath: 'data' }, [['dataMountPath', 'an absolute path, starting with /']])}
    />,
  );
  assert.match(claimed.html, /name="dataClaim" value="fmnist-data"/);
  assert.match(claimed.html, /name="dataMountPath" value="data"/);
  assert.match(claimed.html, /data-field-error="dataMountPath"/);
});
