import { useState } from 'preact/hooks';

import { api, ApiError } from '../api';
import { navigate } from '../util';
import { ConfirmDialog } from './ConfirmDialog';

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
        <ConfirmDialog
          title={`Delete ${props.name}?`}
          confirmLabel="Delete"
          danger
          busy={busy}
          onCancel={() => setAsking(null)}
          onConfirm={() =>
            run(async () => {
              await api('DELETE', base);
              props.afterDelete?.();
            })
          }
        >
          <p>
            The TFJob <strong>{props.namespace}/{props.name}</strong> and all its pods and services
            will be removed. Checkpoints on shared storage stay.
          </p>
          {error && <p class="error-text">{error}</p>}
        </ConfirmDialog>
      )}
      {asking === 'clone' && (
        <ConfirmDialog
          title={`Clone ${props.name}`}
          confirmLabel="Create copy"
          busy={busy}
          onCancel={() => setAsking(null)}
          onConfirm={() =>
            run(async () => {
              const created = await api<{ name: string }>('POST', `${base}/clone`, {
                name: cloneName,
              });
              navigate(`/jobs/${props.namespace}/${created.name}`);
            })
          }
        >
          <label>
            Name of the copy
            <input
              name="cloneName"
              value={cloneName}
              aria-invalid={error ? 'true' : undefined}
              onInput={(e) => setCloneName((e.target as HTMLInputElement).value)}
            />
            {error && <small class="error-text">{error}</small>}
          </label>
        </ConfirmDialog>
      )}
    </span>
  );
}
