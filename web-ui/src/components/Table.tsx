// A table with a header row: the column titles, then the rows given as children.
import type { ComponentChildren } from 'preact';

export function Table(props: { headers: string[]; testid: string; class?: string; children: ComponentChildren }) {
  return (
    <table class={props.class} data-testid={props.testid}>
      <thead>
        <tr>
          {props.headers.map((h) => (
            <th>{h}</th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}
