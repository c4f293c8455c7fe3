import type { ComponentChildren } from 'preact';

export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <dialog open data-testid="confirm-dialog">
      <article>
        <header>
          <h3>{props.title}</h3>
        </header>
        {props.children}
        <footer>
          <button class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
          <button
            class={props.danger ? 'danger' : ''}
            aria-busy={props.busy ? 'true' : 'false'}
            onClick={props.onConfirm}
          >
            {props.confirmLabel}
          </button>
        </footer>
      </article>
    </dialog>
  );
}
