// A figure with its label, in the stats row at the top of a page, and a note below it.
import type { ComponentChildren } from 'preact';

export function Stat(props: {
  label: string;
  value: ComponentChildren;
  note?: ComponentChildren;
  wide?: boolean;
  testid?: string; // of the whole figure
  valueTestid?: string; // of the value alone
}) {
  return (
    <article class={props.wide ? 'stat wide' : 'stat'} data-testid={props.testid}>
      <small>{props.label}</small>
      <strong data-testid={props.valueTestid}>{props.value}</strong>
      {props.note}
    </article>
  );
}
