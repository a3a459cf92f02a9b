/**
 * Code and diffs on the approval card: what will run, highlighted; what an edit changes.
 *
 * `pythonClasses` is a small tokenizer (no editor, no new dependency) that gives each
 * character of Python source a class (keyword, string, comment, number, builtin, a
 * definition's name, operator, a magic or a decorator). The renderer draws the exact
 * text in runs of one class, through `textContent` only, so highlighting can never
 * change or hide a character: the marks for secrets and invisible characters stay on
 * top. A diff is drawn a line at a time, added and removed lines marked by class and by
 * their own `+`/`-`. A `run_python` result's image is drawn only from base64 that is a
 * PNG (it was made in the kernel by approved code and loads nothing).
 */

/** Tools whose argument is code to highlight: tool -> argument name. */
export const CODE_TOOLS: { [tool: string]: string } = { run_python: 'code' };
/** Arguments that are the model's handle on a cell (its id): folded below the arguments,
 * since what a person reads names a cell by its position (agent_kernel/views/code_html.py). */
export const HANDLE_ARGUMENTS: ReadonlySet<string> = new Set(['cell_id', 'below_cell_id']);

const KEYWORDS = new Set(
  (
    'False None True and as assert async await break case class continue def del elif else ' +
    'except finally for from global if import in is lambda match nonlocal not or pass raise ' +
    'return try while with yield'
  ).split(' ')
);
const BUILTINS = new Set(
  (
    'abs all any bool bytes callable compile dict dir enumerate eval exec filter float ' +
    'format getattr globals hasattr hash id input int isinstance issubclass iter len list ' +
    'locals map max min next object open ord print range repr reversed round set setattr ' +
    'sorted str sum super tuple type vars zip __import__'
  ).split(' ')
);
const STRING_START = /[rRbBuUfF]{0,2}('''|"""|'|")/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?/y;
const OPERATOR = /[-+*/%=<>!&|^~@:]+/y;
const PNG_BASE64 = /^iVBORw0KGgo[A-Za-z0-9+/]*={0,2}$/;

function match(pattern: RegExp, text: string, at: number): RegExpExecArray | null {
  pattern.lastIndex = at;
  return pattern.exec(text);
}

/** A class for each character of `text` (null: plain). */
export function pythonClasses(text: string): (string | null)[] {
  const out: (string | null)[] = new Array(text.length).fill(null);
  const mark = (from: number, to: number, css: string): void => {
    for (let i = from; i < to && i < text.length; i++) {
      out[i] = css;
    }
  };
  let i = 0;
  let lineStart = true;
  let naming = false;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') {
      lineStart = true;
      i++;
      continue;
    }
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    const atLineStart = lineStart;
    lineStart = false;
    if (atLineStart && (c === '%' || c === '!' || c === '@')) {
      // IPython's magics and shell lines, and decorators: the rest of the line
      const end = c === '@' ? (match(/@[\w.]+/y, text, i)?.[0].length ?? 1) + i : lineEnd(text, i);
      mark(i, end, 'akl-py-meta');
      i = end;
      continue;
    }
    if (c === '#') {
      const end = lineEnd(text, i);
      mark(i, end, 'akl-py-comment');
      i = end;
      continue;
    }
    const quoted = match(STRING_START, text, i);
    if (quoted) {
      const quote = quoted[1];
      let j = i + quoted[0].length;
      while (j < text.length) {
        if (text.startsWith(quote, j)) {
          j += quote.length;
          break;
        }
        if (text[j] === '\\') {
          j += 2;
          continue;
        }
        if (quote.length === 1 && text[j] === '\n') {
          break;
        }
        j++;
      }
      mark(i, j, 'akl-py-string');
      i = Math.min(j, text.length);
      naming = false;
      continue;
    }
    const name = match(NAME, text, i);
    if (name) {
      const word = name[0];
      const css = KEYWORDS.has(word)
        ? 'akl-py-keyword'
        : naming
          ? 'akl-py-def'
          : BUILTINS.has(word)
            ? 'akl-py-builtin'
            : null;
      if (css) {
        mark(i, i + word.length, css);
      }
      naming = word === 'def' || word === 'class';
      i += word.length;
      continue;
    }
    const number = match(NUMBER, text, i);
    if (number && number[0].length) {
      mark(i, i + number[0].length, 'akl-py-number');
      i += number[0].length;
      continue;
    }
    const operator = match(OPERATOR, text, i);
    if (operator) {
      mark(i, i + operator[0].length, 'akl-py-operator');
      i += operator[0].length;
      continue;
    }
    i++;
  }
  return out;
}

function lineEnd(text: string, from: number): number {
  const end = text.indexOf('\n', from);
  return end < 0 ? text.length : end;
}

/** `text` appended to `parent` in runs of one class (`classes[i]` for `text[i]`). */
export function appendClassed(parent: HTMLElement, text: string, classes: (string | null)[]): void {
  let start = 0;
  for (let i = 1; i <= text.length; i++) {
    if (i < text.length && classes[i] === classes[start]) {
      continue;
    }
    const piece = text.slice(start, i);
    const css = classes[start];
    if (css) {
      const span = document.createElement('span');
      span.className = css;
      span.textContent = piece;
      parent.appendChild(span);
    } else {
      parent.appendChild(document.createTextNode(piece));
    }
    start = i;
  }
}

/** Python source as a highlighted block. */
export function codeBlock(text: string): HTMLPreElement {
  const pre = document.createElement('pre');
  pre.className = 'akl-block akl-py';
  appendClassed(pre, text, pythonClasses(text));
  return pre;
}

/** A unified diff: each line in its own element, marked as added, removed or a hunk. */
export function diffView(diff: string): HTMLPreElement {
  const pre = document.createElement('pre');
  pre.className = 'akl-block akl-diff';
  for (const line of diff.split('\n')) {
    const span = document.createElement('span');
    span.className = line.startsWith('+++') || line.startsWith('---')
      ? 'akl-diff-file'
      : line.startsWith('+')
        ? 'akl-diff-add'
        : line.startsWith('-')
          ? 'akl-diff-del'
          : line.startsWith('@@')
            ? 'akl-diff-hunk'
            : 'akl-diff-same';
    span.textContent = line || ' ';
    pre.appendChild(span);
  }
  return pre;
}

function quiet(text: string): HTMLDivElement {
  const div = document.createElement('div');
  div.className = 'akl-quiet';
  div.textContent = text;
  return div;
}

function pre(text: string, extra = ''): HTMLPreElement {
  const block = document.createElement('pre');
  block.className = `akl-block ${extra}`.trim();
  block.textContent = text;
  return block;
}

/** What `run_python` gave besides its streams: its value, outputs, error's traceback. */
export function pythonResult(box: HTMLElement, result: { [key: string]: unknown }): void {
  if (typeof result['value'] === 'string') {
    box.appendChild(quiet('value'));
    box.appendChild(pre(result['value']));
  }
  const outputs = Array.isArray(result['outputs']) ? result['outputs'] : [];
  for (const output of outputs) {
    if (typeof output !== 'object' || output === null) {
      continue;
    }
    const item = output as { [key: string]: unknown };
    const size = `${Number(item['width']) || 0}×${Number(item['height']) || 0}`;
    if (item['mime'] === 'image/png') {
      const data = item['data'];
      if (typeof data === 'string' && PNG_BASE64.test(data)) {
        const img = document.createElement('img');
        img.className = 'akl-figure';
        img.alt = `figure, ${size} PNG`;
        img.src = `data:image/png;base64,${data}`;
        box.appendChild(img);
      } else {
        box.appendChild(quiet(`[image: ${size} PNG]`));
      }
    } else if (typeof item['text'] === 'string') {
      box.appendChild(quiet(String(item['mime'] ?? 'output')));
      box.appendChild(pre(item['text']));
    }
  }
  const error = result['error'];
  if (typeof error === 'object' && error !== null) {
    const trace = (error as { [key: string]: unknown })['traceback'];
    if (typeof trace === 'string' && trace) {
      box.appendChild(pre(trace, 'akl-traceback'));
    }
  }
}
