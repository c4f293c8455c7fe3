// Component tests without a browser: a component is rendered to HTML (preact-render-to-string)
// while every element it creates is recorded, so a test reads the markup and calls an element's
// handlers (onInput, onClick...) with a stand-in event. Test-only (*.test.tsx).
import { options, VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Element = VNode<any>;

export interface Rendered {
  html: string;
  // Every element created while rendering that `match` accepts, in creation order.
  all(match: (element: Element) => boolean): Element[];
  // The first one; throws when there is none.
  find(match: (element: Element) => boolean): Element;
}

export function render(node: VNode): Rendered {
  const created: Element[] = [];
  const previous = options.vnode;
  options.vnode = (element) => {
    created.push(element);
    previous?.(element);
  };
  let html: string;
  try {
    html = renderToString(node);
  } finally {
    options.vnode = previous;
  }
  const all = (match: (element: Element) => boolean) => created.filter(match);
  return {
    html,
    all,
    find(match) {
      const found = created.find(match);
      if (!found) throw new Error(`no such element in: ${html}`);
      return found;
    },
  };
}

// An element of tag `type` with the attribute name=`name`.
export const named = (type: string, name: string) => (e: Element) => e.type === type && e.props.name === name;

// A stand-in for the event an input's handler reads (`e.target.value`, `.checked`).
export function inputEvent(target: { value?: string; checked?: boolean }): Event {
  return { target, preventDefault() {} } as unknown as Event;
}

// The calls a stand-in callback received.
export function recorder<Args extends unknown[]>(): { calls: Args[]; fn: (...args: Args) => void } {
  const calls: Args[] = [];
  return { calls, fn: (...args: Args) => void calls.push(args) };
}
