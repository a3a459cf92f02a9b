/**
 * Code blocks in an answer: drawn like the tool cards' blocks, each with Copy and, in a
 * notebook whose kernel ran the run, "Insert as a cell below".
 *
 * The block's text is read with `textContent` from what JupyterLab's sanitizing Markdown
 * renderer drew, and goes to the clipboard or into a new cell as text only. Inserting is
 * the person's own act (a click), so it asks for no approval; nothing runs: the new cell
 * waits for the person to run it, and carries no "written by the agent" mark.
 */

/** Puts a new code cell holding `source` below the run's cell; false when it cannot. */
export type InsertCell = (source: string) => boolean;

const COPIED_MS = 1500;

function toolButton(label: string, title: string, onClick: (button: HTMLButtonElement) => void): HTMLButtonElement {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'jp-Button jp-mod-styled jp-mod-reject akl-code-tool';
  button.textContent = label;
  button.title = title;
  button.addEventListener('click', event => {
    event.preventDefault();
    event.stopPropagation();
    onClick(button);
  });
  return button;
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Give every code block of a rendered answer the tool cards' look and its two buttons. */
export function answerCodeTools(host: HTMLElement, insert: InsertCell | null): void {
  for (const pre of Array.from(host.querySelectorAll<HTMLPreElement>('pre'))) {
    if (pre.parentElement?.classList.contains('akl-answer-code')) {
      continue;
    }
    const text = () => (pre.textContent ?? '').replace(/\n$/, '');
    const frame = document.createElement('div');
    frame.className = 'akl-answer-code';
    pre.replaceWith(frame);
    pre.classList.add('akl-block');
    const tools = document.createElement('div');
    tools.className = 'akl-code-tools';
    tools.appendChild(
      toolButton('Copy', 'Copy this code', button => {
        void copyText(text()).then(done => {
          button.textContent = done ? 'Copied' : 'Could not copy';
          window.setTimeout(() => (button.textContent = 'Copy'), COPIED_MS);
        });
      })
    );
    if (insert) {
      tools.appendChild(
        toolButton('Insert as a cell below', 'Put this code in a new cell below the run (it does not run)', button => {
          const done = insert(text());
          button.textContent = done ? 'Inserted below' : 'Could not insert';
          window.setTimeout(() => (button.textContent = 'Insert as a cell below'), COPIED_MS);
        })
      );
    }
    frame.append(pre, tools);
  }
}
