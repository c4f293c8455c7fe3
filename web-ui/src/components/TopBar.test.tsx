import assert from 'node:assert/strict';
import { test } from 'node:test';

import { recorder, render } from '../testing/render';
import { TopBar } from './TopBar';

const config = { namespaces: ['default'], readOnly: false, localRun: false, version: '0.1.0' };

test('the bar links the pages and marks the one shown', () => {
  const r = render(<TopBar path="/cluster" config={config} signedIn={false} onSignOut={() => {}} />);
  assert.match(r.html, /href="\/new"/);
  assert.match(r.html, /<a href="\/cluster" class="active">Cluster/);
  assert.doesNotMatch(r.html, /Sign out/);
  assert.match(render(<TopBar path="/jobs/default/mnist" config={config} signedIn={false} onSignOut={() => {}} />).html, /<a href="\/" class>Jobs/);
});

test('a local run offers no New job and says so; a read-only UI says so', () => {
  const local = render(<TopBar path="/" config={{ ...config, localRun: true }} signedIn={true} onSignOut={() => {}} />);
  assert.doesNotMatch(local.html, /href="\/new"/);
  assert.match(local.html, /data-testid="local-run"/);
  assert.match(render(<TopBar path="/" config={{ ...config, readOnly: true }} signedIn={false} onSignOut={() => {}} />).html, /read-only/);
});

test('signing out is offered to a signed-in user', () => {
  const out = recorder<[]>();
  const r = render(<TopBar path="/" config={config} signedIn={true} onSignOut={out.fn} />);
  r.find((e) => e.type === 'a' && e.props.children === 'Sign out').props.onClick({ preventDefault() {} });
  assert.equal(out.calls.length, 1);
});
