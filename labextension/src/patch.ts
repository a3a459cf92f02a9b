/**
 * Update a drawn run in place: the live run is drawn afresh from each state the kernel
 * pushes (render.ts stays a plain function of the state), then `patch` carries only
 * what differs into the nodes already on the page.
 *
 * Why: a node replaced between a mouse press and its release loses the click, and a
 * replaced button loses focus, hover and pressed state; a replaced text node loses the
 * person's selection. So nodes are matched (by `data-key` where render.ts gives one: an
 * entry, a call, a question, an option; else by tag and place) and kept; only changed
 * text, attributes and new or gone children are written. Listeners stay those of the
 * kept node (their closures name the same run, question and option, which the key
 * guarantees). A `<details>` keeps a person's own unfolding; an input keeps what is
 * typed; an element marked `data-opaque` (rendered Markdown) is left alone while its
 * `data-key` (its source) is the same.
 */

function keyOf(node: Node): string | null {
  if (node.nodeType !== Node.ELEMENT_NODE) {
    return null;
  }
  const element = node as HTMLElement;
  return element.dataset.key ?? null;
}

function sameKind(a: Node, b: Node): boolean {
  if (a.nodeType !== b.nodeType) {
    return false;
  }
  if (a.nodeType !== Node.ELEMENT_NODE) {
    return true;
  }
  return (a as Element).tagName === (b as Element).tagName && keyOf(a) === keyOf(b);
}

function patchAttributes(old: HTMLElement, fresh: HTMLElement): void {
  // What the card's drawn default was, read before the attributes are brought up to date.
  const before = old.dataset.defaultOpen === 'true';
  for (const name of Array.from(old.getAttributeNames())) {
    if (name !== 'open' && !fresh.hasAttribute(name)) {
      old.removeAttribute(name);
    }
  }
  for (const name of fresh.getAttributeNames()) {
    if (name === 'open') {
      continue;
    }
    const value = fresh.getAttribute(name) ?? '';
    if (old.getAttribute(name) !== value) {
      old.setAttribute(name, value);
    }
  }
  if (old instanceof HTMLButtonElement || old instanceof HTMLInputElement) {
    const disabled = (fresh as HTMLButtonElement).disabled;
    if (old.disabled !== disabled) {
      old.disabled = disabled;
    }
  }
  if (old instanceof HTMLDetailsElement && fresh instanceof HTMLDetailsElement) {
    // The drawn default changes (a card stops waiting): follow it unless the person
    // unfolded or folded the card themselves.
    const now = fresh.dataset.defaultOpen === 'true';
    const toggled = old.open !== before;
    const open = toggled ? !now : now;
    if (old.open !== open) {
      old.open = open;
    }
  }
}

/** Make `old` look like `fresh`, keeping every node of `old` that still fits. */
export function patch(old: Node, fresh: Node): void {
  if (old.nodeType === Node.TEXT_NODE) {
    if (old.nodeValue !== fresh.nodeValue) {
      old.nodeValue = fresh.nodeValue;
    }
    return;
  }
  if (old.nodeType !== Node.ELEMENT_NODE) {
    return;
  }
  const oldEl = old as HTMLElement;
  const freshEl = fresh as HTMLElement;
  if (oldEl.dataset.opaque !== undefined && oldEl.dataset.key === freshEl.dataset.key) {
    return;
  }
  patchAttributes(oldEl, freshEl);
  if (oldEl.dataset.opaque !== undefined) {
    oldEl.replaceChildren(...Array.from(freshEl.childNodes));
    return;
  }
  patchChildren(oldEl, freshEl);
}

function patchChildren(old: HTMLElement, fresh: HTMLElement): void {
  const keyed = new Map<string, Node>();
  for (const child of Array.from(old.childNodes)) {
    const key = keyOf(child);
    if (key !== null) {
      keyed.set(`${(child as Element).tagName}:${key}`, child);
    }
  }
  const wanted = Array.from(fresh.childNodes);
  let at: Node | null = old.firstChild;
  for (const next of wanted) {
    const key = keyOf(next);
    let match: Node | null = null;
    if (key !== null) {
      match = keyed.get(`${(next as Element).tagName}:${key}`) ?? null;
    } else if (at && keyOf(at) === null && sameKind(at, next)) {
      match = at;
    }
    if (match) {
      if (match !== at) {
        old.insertBefore(match, at);
      } else {
        at = at.nextSibling;
      }
      patch(match, next);
    } else {
      old.insertBefore(next, at);
    }
  }
  // What is left after the last wanted node is gone from the state.
  while (at) {
    const gone: Node = at;
    at = at.nextSibling;
    old.removeChild(gone);
  }
}
