import { useState } from 'preact/hooks';

import { api, ApiError, CreatedAnswer } from '../api';
import { navigate } from '../util';
import { ConfirmDialog } from './ConfirmDialog';

// What either dialog shows of the request and does with the answer.
interface DialogProps {
  name: string;
  busy: boolean;
  error: string;
  onCancel: () => void;
  onConfirm: () => void;
}

function DeleteDialog(props: DialogProps & { namespace: string }) {
  return (
    <ConfirmDialog
      title={`Delete ${props.name}?`}
      confirmLabel="Delete"
      danger
      busy={props.busy}
      onCancel={props.onCancel}
      onConfirm={props.onConfirm}
    >
      <p>
        The TFJob <strong>{props.namespace}/{props.name}</strong> and all its pods and services
        will be removed. Checkpoints on shared storage stay.
      </p>
      {props.error && <p class="error-text">{props.error}</p>}
    </ConfirmDialog>
  );
}

// Asks for the copy's name.
function CloneDialog(props: DialogProps & { cloneName: string; onCloneName: (name: string) => void }) {
  return (
    <ConfirmDialog
      title={`Clone ${props.name}`}
      confirmLabel="Create copy"
      busy={props.busy}
      onCancel={props.onCancel}
      onConfirm={props.onConfirm}
    >
      <label>
        Name of the copy
        <input
          name="cloneName"
          value={props.cloneName}
          aria-invalid={props.error ? 'true' : undefined}
          onInput={(e) => props.onCloneName((e.target as HTMLInputElement).value)}
        />
        {props.error && <small class="error-text">{props.error}</small>}
      </label>
    </ConfirmDialog>
  );
}

// Clone and delete (with confirmation) for one job.
export function JobActions(props: {
  namespace: string;
  name: string;
  readOnly: boolean;
  onChanged: () => void;
  afterDelete?: () => void;
}) {
  const [asking, setAsking] = useState<'delete' | 'clone' | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [cloneName, setCloneName] = useState('');
  const base = `namespaces/${encodeURIComponent(props.namespace)}/tfjobs/${encodeURIComponent(props.name)}`;

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError('');
    try {
      await action();
      setAsking(null);
      props.onChanged();
    } catch (e) {
      setError((e as ApiError).message);
    } finally {
      setBusy(false);
    }
  };

  if (props.readOnly) return null;
  return (
    <span class="actions">
      <button
        class="outline small"
        data-testid="clone"
        onClick={() => {
          setCloneName(`${props.name.slice(0, 50)}-copy`);
          setAsking('clone');
        }}
      >
        Clone
      </button>
      <button class="outline small danger" data-testid="delete" onClick={() => setAsking('delete')}>
        Delete
      </button>
      {asking === 'delete' && (
        <DeleteDialog
          namespace={props.namespace}
          name={props.name}
          busy={busy}
          error={error}
          onCancel={() => setAsking(null)}
          onConfirm={() =>
            run(async () => {
              await api('DELETE', base);
              props.afterDelete?.();
            })
          }
        />
      )}
      {asking === 'clone' && (
        <CloneDialog
          name={props.name}
          cloneName={cloneName}
          onCloneName={setCloneName}
          busy={busy}
          error={error}
          onCancel={() => setAsking(null)}
          onConfirm={() =>
            run(async () => {
              const created = await api<CreatedAnswer>('POST', `${base}/clone`, { name: cloneName });
              navigate(`/jobs/${props.namespace}/${created.name}`);
            })
          }
        />
      )}
    </span>
  );
}
