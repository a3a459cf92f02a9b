/**
 * A run drawn with DOM calls from its saved state: data in, elements out.
 *
 * Every string from the model, a tool or a person goes in through
 * `textContent` (never `innerHTML`); only the answer's Markdown goes through
 * JupyterLab's sanitizing Markdown renderer, handed in as `markdown`. Colours
 * come from the stylesheet (style/base.css), which uses theme variables only.
 * A live approval shows its exact arguments (asked of the kernel, never saved)
 * instead of the saved, redacted ones; Approve waits until they are shown.
 */

import { CODE_TOOLS, HANDLE_ARGUMENTS, appendClassed, codeBlock, diffView, pythonClasses, pythonResult } from './code';
import {
  Entry,
  ExactState,
  IAgentEntry,
  IExactPart,
  IExactRow,
  IQuestionEntry,
  IRunState,
  IToolEntry
} from './state';
import {
  ALWAYS,
  APPROVE,
  EXACT_LOADING,
  EXACT_TITLE,
  INVISIBLE_LEGEND,
  INVISIBLE_NOTE,
  SECRET_LEGEND,
  SECRET_NOTE,
  STATUS_TEXT,
  askerId,
  clock,
  endedWaits,
  exactProblem,
  localDate,
  modelWords,
  outcome,
  questionLabel,
  seconds,
  statusWords,
  workName
} from './words';

/** Renders Markdown into a host element (sanitized), or shows it as text. */
export type MarkdownRenderer = (host: HTMLElement, source: string) => Promise<void>;

/** What a live run's controls can do, and what the renderer keeps between redraws. */
export interface ILiveControls {
  /** A kernel is connected (else the controls say they cannot reach it). */
  connected: boolean;
  /** Text typed into free-text answers, by question id. */
  drafts: Map<string, string>;
  /** Requests on their way to the kernel (question ids, or `stop`). */
  sending: Set<string>;
  /** Why the kernel refused a request, by question id (or `stop`). */
  notes: Map<string, string>;
  answer(questionId: string, text: string): void;
  stop(): void;
  /** A waiting approval's exact arguments (asked of the kernel the first time). */
  exact(questionId: string): ExactState;
}

const APPROVAL_BUTTONS: { [option: string]: string } = {
  Approve: 'jp-mod-accept',
  Deny: 'jp-mod-reject',
  [ALWAYS]: 'jp-mod-reject akl-always'
};

const MARKS: { [state: string]: string } = { running: '◌', waiting: '?', ok: '✓', failed: '✗' };
/** What each mark says to a screen reader. */
const MARK_LABELS: { [state: string]: string } = {
  running: 'running',
  waiting: 'waiting for your approval',
  ok: 'done',
  failed: 'failed'
};
const TABLE_COLUMNS = 8;
const CELL_CHARS = 200;

/** An element with classes and (escaped) text. */
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Text with `backticked` parts shown as code. */
function withCode(parent: HTMLElement, text: string): HTMLElement {
  text.split('`').forEach((part, i) => {
    if (!part) {
      return;
    }
    parent.appendChild(i % 2 ? el('code', 'akl-code', part) : document.createTextNode(part));
  });
  return parent;
}

function compact(value: unknown, limit = CELL_CHARS): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return text.length <= limit ? text : text.slice(0, limit - 1) + '…';
}

function isRecord(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The list of records a result holds (itself, or its one list of records). */
function recordsOf(result: unknown): { [key: string]: unknown }[] | null {
  const isRecords = (v: unknown): v is { [key: string]: unknown }[] =>
    Array.isArray(v) && v.length > 0 && v.every(isRecord);
  if (isRecords(result)) {
    return result;
  }
  if (isRecord(result)) {
    const lists = Object.values(result).filter(isRecords);
    if (lists.length === 1) {
      return lists[0];
    }
  }
  return null;
}

function block(text: string, extra = ''): HTMLPreElement {
  return el('pre', `akl-block ${extra}`.trim(), text);
}

/** Arguments as key/value rows; keys whose value is null are left out; a tool's code
 * (run_python's `code`) highlighted; a cell's id folded below (ids are the model's handle,
 * never the default view). */
export function argumentsTable(args: unknown, tool?: string): HTMLElement | null {
  if (!isRecord(args)) {
    return args === null || args === undefined ? null : block(compact(args, 4000));
  }
  const given = Object.entries(args).filter(([, v]) => v !== null && v !== undefined);
  const rows = given.filter(([key]) => !HANDLE_ARGUMENTS.has(key));
  const handles = given.filter(([key]) => HANDLE_ARGUMENTS.has(key));
  if (!given.length) {
    return null;
  }
  const table = el('table', 'akl-args');
  fillRows(table, rows, tool);
  if (!handles.length) {
    return table;
  }
  const folded = el('details', 'akl-quiet akl-handles');
  folded.dataset.key = 'cell-ids';
  folded.appendChild(el('summary', '', 'cell id'));
  const ids = el('table', 'akl-args');
  fillRows(ids, handles);
  folded.appendChild(ids);
  const box = el('div', 'akl-args-box');
  if (rows.length) {
    box.appendChild(table);
  }
  box.appendChild(folded);
  return box;
}

function fillRows(table: HTMLTableElement, rows: [string, unknown][], tool?: string): void {
  for (const [key, value] of rows) {
    const row = table.insertRow();
    row.appendChild(el('th', '', key));
    const cell = row.insertCell();
    if (typeof value === 'string' && tool && CODE_TOOLS[tool] === key) {
      cell.appendChild(codeBlock(value));
    } else if (typeof value === 'string' && value.includes('\n')) {
      cell.appendChild(block(value));
    } else {
      cell.textContent = compact(value, 4000);
    }
  }
}

/** Exact text in parts: plain, a marked secret, an invisible character as a token;
 * `code`: highlighted as Python under the marks (every character kept). */
function exactParts(parent: HTMLElement, parts: IExactPart[], code = false): HTMLElement {
  const classes = code ? pythonClasses(parts.map(part => part.text).join('')) : null;
  let at = 0;
  const add = (holder: HTMLElement, text: string): void => {
    if (classes) {
      appendClassed(holder, text, classes.slice(at, at + text.length));
    } else {
      holder.appendChild(document.createTextNode(text));
    }
  };
  for (const part of parts) {
    if (part.mark === 'secret') {
      const mark = el('mark', 'akl-secret');
      add(mark, part.text);
      mark.title = SECRET_NOTE;
      parent.appendChild(mark);
    } else if (part.mark === 'invisible') {
      const token = el('span', 'akl-invisible', part.text);
      token.title = INVISIBLE_NOTE;
      parent.appendChild(token);
    } else {
      add(parent, part.text);
    }
    at += part.text.length;
  }
  return parent;
}

/** A waiting approval's arguments exactly as the tool gets them, or why they are not here;
 * the tool's code (run_python's `code`) highlighted. */
export function exactView(exact: ExactState, tool?: string): HTMLElement {
  const box = el('div', 'akl-exact');
  if ('loading' in exact) {
    box.appendChild(el('div', 'akl-quiet', EXACT_LOADING));
    return box;
  }
  if ('error' in exact) {
    box.appendChild(el('div', 'akl-note', exactProblem(exact.error)));
    return box;
  }
  box.appendChild(el('div', 'akl-exact-title', EXACT_TITLE));
  const table = el('table', 'akl-args akl-exact-args');
  const marks = new Set<string>();
  for (const row of exact.rows as IExactRow[]) {
    const line = table.insertRow();
    if (row.name !== null) {
      line.appendChild(exactParts(el('th'), [{ text: row.name, mark: null }]));
    }
    const cell = line.insertCell();
    const code = !!tool && row.name !== null && CODE_TOOLS[tool] === row.name;
    const holder = code ? block('', 'akl-py') : row.block ? block('') : el('code', 'akl-exact-value');
    cell.appendChild(exactParts(holder, row.parts, code));
    row.parts.forEach(part => part.mark && marks.add(part.mark));
  }
  if (table.rows.length) {
    box.appendChild(table);
  }
  const legend = el('div', 'akl-exact-legend akl-quiet');
  if (marks.has('secret')) {
    legend.appendChild(el('mark', 'akl-secret', 'highlighted'));
    legend.appendChild(document.createTextNode(`: ${SECRET_LEGEND}`));
  }
  if (marks.has('invisible')) {
    if (marks.has('secret')) {
      legend.appendChild(document.createTextNode(' · '));
    }
    legend.appendChild(el('span', 'akl-invisible', 'U+…'));
    legend.appendChild(document.createTextNode(`: ${INVISIBLE_LEGEND}`));
  }
  if (legend.childNodes.length) {
    box.appendChild(legend);
  }
  return box;
}

function recordsTable(records: { [key: string]: unknown }[]): HTMLTableElement {
  const columns: string[] = [];
  for (const record of records) {
    for (const key of Object.keys(record)) {
      if (!columns.includes(key)) {
        columns.push(key);
      }
    }
  }
  const shown = columns.slice(0, TABLE_COLUMNS);
  const table = el('table', 'akl-table');
  const head = table.createTHead().insertRow();
  shown.forEach(c => head.appendChild(el('th', '', c)));
  const body = table.createTBody();
  for (const record of records) {
    const row = body.insertRow();
    shown.forEach(c => {
      const value = record[c];
      row.insertCell().textContent = value === undefined || value === null ? '' : compact(value);
    });
  }
  return table;
}

/** A fetched response: where it came from, then what it says. */
function pageView(box: HTMLElement, result: { [key: string]: unknown }): void {
  const head = ['status', 'url', 'content_type']
    .map(k => result[k])
    .filter(v => v !== null && v !== undefined && v !== '')
    .map(String)
    .join(' · ');
  box.appendChild(el('div', 'akl-quiet akl-page-head', head));
  if (typeof result['title'] === 'string' && result['title']) {
    box.appendChild(el('div', 'akl-page-title', result['title']));
  }
  if (typeof result['path'] === 'string') {
    box.appendChild(el('div', '', `saved to ${result['path']} · ${String(result['bytes'])} bytes`));
  }
  const body = 'json' in result ? result['json'] : (result['content'] ?? result['body']);
  if (typeof body === 'string' && body) {
    box.appendChild(block(body, 'akl-page'));
  } else if (body !== null && body !== undefined && typeof body !== 'string') {
    box.appendChild(block(JSON.stringify(body, null, 2) ?? String(body), 'akl-json'));
  }
  if (typeof result['note'] === 'string' && result['note']) {
    box.appendChild(el('div', 'akl-quiet', result['note']));
  }
}

const STEP_WORDS: Record<string, [string, string]> = {
  completed: ['☑', 'done'],
  in_progress: ['◐', 'in progress'],
  pending: ['☐', 'to do']
};

/** A plan_create result as a checklist (its summary, each step with its status in words),
 * or null when the result is not a plan. The model's words go in as text, never markup. */
export function planView(entry: IToolEntry): HTMLElement | null {
  const plan = isRecord(entry.result) ? entry.result['plan'] : null;
  if (entry.tool !== 'plan_create' || entry.state !== 'ok' || !isRecord(plan)) {
    return null;
  }
  const steps = Array.isArray(plan['steps']) ? plan['steps'].filter(isRecord) : [];
  const box = el('div', 'akl-result akl-plan');
  if (typeof plan['summary'] === 'string' && plan['summary']) {
    box.appendChild(el('p', 'akl-plan-summary', plan['summary']));
  }
  const list = el('ul', 'akl-plan-steps');
  for (const step of steps) {
    const status = typeof step['status'] === 'string' ? step['status'] : 'pending';
    const [mark, words] = STEP_WORDS[status] ?? STEP_WORDS['pending'];
    const item = el('li', 'akl-plan-step');
    item.dataset.status = status;
    const sign = el('span', 'akl-plan-mark', mark);
    sign.setAttribute('aria-hidden', 'true');
    item.appendChild(sign);
    item.appendChild(document.createTextNode(` ${String(step['step'] ?? '')} `));
    item.appendChild(el('span', 'akl-quiet', `(${words})`));
    list.appendChild(item);
  }
  box.appendChild(list);
  for (const [key, title] of [['risks', 'Risks'], ['questions', 'Questions']]) {
    const said = Array.isArray(plan[key]) ? plan[key].filter(x => typeof x === 'string') : [];
    if (said.length) {
      box.appendChild(el('div', 'akl-quiet', `${title}: ${said.join('; ')}`));
    }
  }
  if (typeof plan['completion'] === 'string' && plan['completion']) {
    box.appendChild(el('div', 'akl-quiet', `Done when: ${plan['completion']}`));
  }
  return box;
}

/** Records of the memory store (`recall`'s): each has its text and its id. */
function isMemories(records: { [key: string]: unknown }[]): boolean {
  return records.every(r => 'content' in r && 'memory_id' in r);
}

/**
 * Memories as a short list (text, then its date and tags), ids and match scores folded
 * under "ids and scores", as views/memory_table.py draws them.
 */
function memoryList(records: { [key: string]: unknown }[]): HTMLElement {
  const box = el('div', 'akl-memories agent-kernel-memory');
  const list = el('ol', 'akl-memory-list');
  const folded: string[] = [];
  for (const record of records) {
    const item = el('li', 'akl-memory');
    item.appendChild(el('div', 'akl-memory-text', String(record['content'] ?? '')));
    const quiet: string[] = [];
    if (typeof record['timestamp'] === 'string' && record['timestamp']) {
      quiet.push(localDate(record['timestamp']));
    }
    const tags = record['tags'];
    if (Array.isArray(tags) && tags.length) {
      quiet.push(`tags: ${tags.map(String).join(', ')}`);
    }
    if (record['long_term'] === true) {
      quiet.push('long-term');
    }
    if (quiet.length) {
      item.appendChild(el('div', 'akl-quiet ak-memory-line', quiet.join(' · ')));
    }
    list.appendChild(item);
    const secondary = [String(record['memory_id'] ?? '')];
    if (typeof record['score'] === 'number') {
      secondary.push(`match ${record['score'].toFixed(2)}`);
    }
    folded.push(secondary.filter(s => s).join(' · '));
  }
  box.appendChild(list);
  const details = el('details', 'akl-quiet akl-memory-ids');
  details.dataset.key = 'memory-ids';
  details.appendChild(el('summary', '', 'ids and scores'));
  const ids = el('ol', 'akl-memory-list');
  for (const line of folded) {
    ids.appendChild(el('li', '', line));
  }
  details.appendChild(ids);
  box.appendChild(details);
  return box;
}

/** A tool's result drawn by its kind: text, a page, JSON, a table of records, or an error
 * (a plan as its checklist). */
export function resultView(entry: IToolEntry): HTMLElement | null {
  const plan = planView(entry);
  if (plan) {
    return plan;
  }
  const result = entry.result;
  const box = el('div', 'akl-result');
  box.dataset.kind = entry.result_kind ?? '';
  if (entry.result_kind !== 'error' && entry.error) {
    // A failed call whose answer says more (a command's output, a 404 page).
    box.appendChild(el('p', 'akl-error-text', entry.error));
  }
  switch (entry.result_kind) {
    case 'error':
      box.appendChild(el('p', 'akl-error-text', entry.error || 'The call failed.'));
      return box;
    case 'page':
      if (isRecord(result)) {
        pageView(box, result);
      }
      return box;
    case 'text':
      if (typeof result === 'string') {
        box.appendChild(block(result));
      } else if (isRecord(result)) {
        // bash: its streams as they were written, each under its name.
        for (const stream of ['stdout', 'stderr']) {
          const text = result[stream];
          if (typeof text === 'string' && text) {
            box.appendChild(el('div', 'akl-quiet', stream));
            box.appendChild(block(text));
          }
        }
        pythonResult(box, result); // run_python: its value, outputs and traceback
        const notes = ['truncated', 'timed_out'].filter(n => result[n]);
        if (notes.length) {
          box.appendChild(el('div', 'akl-quiet', notes.join(', ').replace('_', ' ')));
        }
        if (!box.querySelector('pre, img')) {
          box.appendChild(el('div', 'akl-quiet', 'no output'));
        }
        if (typeof result['sandbox'] === 'string' && result['sandbox']) {
          box.appendChild(el('div', 'akl-quiet akl-sandbox', `sandbox: ${result['sandbox']}`));
        }
      }
      return box;
    case 'table': {
      const records = recordsOf(result);
      if (records && isMemories(records)) {
        box.appendChild(memoryList(records));
        return box;
      }
      if (records) {
        box.appendChild(recordsTable(records));
      }
      if (isRecord(result)) {
        const rest = Object.entries(result).filter(([, v]) => v !== records);
        if (rest.length) {
          const words = rest.map(([k, v]) => `${k}: ${compact(v)}`).join(' · ');
          box.appendChild(el('div', 'akl-quiet', words));
        }
      }
      return box;
    }
    case 'json':
      box.appendChild(block(JSON.stringify(result, null, 2) ?? String(result), 'akl-json'));
      return box;
    default:
      return null;
  }
}

/** The ledger record of one call, as one quiet line. */
function ledgerLine(entry: IToolEntry): HTMLElement | null {
  const ledger = entry.ledger;
  if (!ledger) {
    return null;
  }
  const parts = [`ledger ${ledger.record_id}`];
  const at = clock(ledger.timestamp);
  if (at) {
    parts.push(at);
  }
  parts.push('in ledger ✓');
  if (ledger.hash) {
    parts.push(ledger.hash.slice(0, 12));
  }
  const line = el('div', 'akl-ledger akl-quiet', parts.join(' · '));
  if (ledger.hash) {
    line.title = `hash ${ledger.hash}`;
  }
  return line;
}

function button(
  label: string,
  classes: string,
  title: string,
  onClick: () => void,
  key?: string
): HTMLButtonElement {
  const node = el('button', `jp-Button jp-mod-styled ${classes}`, label);
  node.type = 'button';
  node.dataset.key = key ?? label;
  node.title = title;
  node.addEventListener('click', event => {
    event.preventDefault();
    event.stopPropagation();
    onClick();
  });
  return node;
}

function countdown(left: number): string {
  const s = Math.max(0, Math.round(left));
  if (s >= 3600) {
    return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
  }
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The controls of a waiting question or approval: buttons or a text box, and the time left. */
export function answerControls(question: IQuestionEntry, live: ILiveControls): HTMLElement {
  const box = el('div', 'akl-controls');
  box.dataset.questionId = question.question_id;
  box.dataset.key = question.question_id;
  const qid = question.question_id;
  const busy = live.sending.has(qid) || !live.connected;
  // Nothing is approved unseen: Approve and Always wait for the exact arguments.
  const unseen = question.approval && !('rows' in live.exact(qid));
  const row = el('div', 'akl-buttons');
  if (question.options && question.options.length) {
    for (const option of question.options) {
      const classes = question.approval
        ? `agent-kernel-approval ${APPROVAL_BUTTONS[option] ?? 'jp-mod-reject'}`
        : `agent-kernel-option ${option === question.default ? 'jp-mod-accept' : 'jp-mod-reject'}`;
      const title =
        question.approval && option === ALWAYS
          ? 'Allow this tool for the rest of the session (revoke with %agent_config --revoke)'
          : option;
      const node = button(option, classes, title, () => live.answer(qid, option), `option:${option}`);
      node.disabled = busy || (unseen && (option === APPROVE || option === ALWAYS));
      row.appendChild(node);
    }
  } else {
    const holder = el('span', 'agent-kernel-answer-text');
    const input = el('input', 'jp-mod-styled akl-answer-input');
    input.type = 'text';
    input.placeholder = 'Your answer, then Enter';
    input.value = live.drafts.get(qid) ?? '';
    input.dataset.questionId = qid;
    input.disabled = busy;
    input.setAttribute('aria-label', 'Your answer');
    input.addEventListener('input', () => live.drafts.set(qid, input.value));
    const send = () => {
      live.drafts.delete(qid);
      live.answer(qid, input.value);
    };
    input.addEventListener('keydown', event => {
      if (event.key === 'Enter' && !event.isComposing) {
        event.preventDefault();
        event.stopPropagation();
        send();
      }
    });
    holder.appendChild(input);
    row.appendChild(holder);
    const sendButton = button('Send', 'jp-mod-accept agent-kernel-answer-send', 'Send your answer', send);
    sendButton.disabled = busy;
    row.appendChild(sendButton);
  }
  box.appendChild(row);
  const note = live.notes.get(qid);
  const left = question.seconds_left;
  let words = '';
  if (!live.connected) {
    words = 'The kernel that asked is not connected: this can no longer be answered here.';
  } else if (live.sending.has(qid)) {
    words = 'sending your answer…';
  } else if (left !== undefined && left !== null) {
    const then = question.default ? ` · then: ${question.default}` : '';
    words = `answer within ${countdown(left)}${then}`;
  }
  if (words) {
    const line = el('div', 'akl-countdown akl-quiet', words);
    // Near the end the time left changes colour (a fifth of the wait, 10 s to 1 min).
    const late =
      live.connected &&
      !live.sending.has(qid) &&
      left !== undefined &&
      left !== null &&
      left <= Math.max(10, Math.min(60, question.timeout / 5));
    line.classList.toggle('akl-countdown-late', late);
    box.appendChild(line);
  }
  if (note) {
    box.appendChild(el('div', 'akl-note', note));
  }
  return box;
}

function outcomeLine(question: IQuestionEntry, running: boolean, live = false): HTMLElement {
  const line = el('div', 'akl-outcome', outcome(question, running));
  line.dataset.source = question.source ?? 'waiting';
  // Live, the controls show the time left instead.
  if (question.source === null && running && !live) {
    line.appendChild(
      el('span', 'akl-quiet', ` (no answer after ${Math.round(question.timeout)} s ends it)`)
    );
  }
  return line;
}

/** One tool call: a card whose summary line says what it did, details on demand. */
export function toolCard(
  entry: IToolEntry,
  running: boolean,
  live: ILiveControls | null = null
): HTMLElement {
  const card = el('details', 'akl-tool');
  card.dataset.state = entry.state;
  card.dataset.callId = entry.call_id;
  card.dataset.key = `call:${entry.call_id}`;
  // A question and its answer stay in view; other cards open only while they wait.
  // A plan stays in view too: its checklist is the point of the call.
  card.open = entry.state === 'waiting' || (!!entry.approval && !entry.approval.approval) ||
    (entry.tool === 'plan_create' && entry.state === 'ok');
  card.dataset.defaultOpen = String(card.open);
  const summary = el('summary', 'akl-tool-summary');
  const mark = el('span', `akl-mark akl-mark-${entry.state}`, MARKS[entry.state] ?? '');
  mark.setAttribute('role', 'img');
  const asks = !!entry.approval && !entry.approval.approval;
  mark.setAttribute(
    'aria-label',
    asks && entry.state === 'waiting' ? 'waiting for your answer' : (MARK_LABELS[entry.state] ?? entry.state)
  );
  summary.appendChild(mark);
  summary.appendChild(el('span', 'akl-tool-name', entry.tool));
  summary.appendChild(document.createTextNode(' · '));
  summary.appendChild(withCode(el('span', 'akl-summary'), entry.summary));
  card.appendChild(summary);
  const body = el('div', 'akl-tool-body');
  if (asks && entry.approval) {
    // ask_user's question inside its card: the question, its options (live) or its
    // answer, once each; no arguments or result that would say them again.
    body.appendChild(questionView(entry.approval, running, live, true));
    const ledger = ledgerLine(entry);
    if (ledger) {
      body.appendChild(ledger);
    }
    card.appendChild(body);
    return card;
  }
  const question = entry.approval;
  const waiting = !!question && (question.source === null || question.source === undefined);
  // Live and waiting: the exact arguments instead of the saved, redacted ones.
  const args =
    live && question && waiting
      ? exactView(live.exact(question.question_id), entry.tool)
      : argumentsTable(entry.arguments, entry.tool);
  if (args) {
    body.appendChild(args);
  }
  const diff = question?.details?.['diff'];
  if (typeof diff === 'string' && diff) {
    body.appendChild(diffView(diff));
  }
  if (entry.approval) {
    const approval = el('div', 'akl-approval');
    approval.appendChild(el('span', 'akl-label', 'Approval: '));
    if (live && waiting) {
      approval.classList.add('akl-approval-live');
      approval.appendChild(
        el('span', 'akl-outcome', `Waiting for your approval: allow ${entry.tool} to run with the arguments above?`)
      );
      const sandbox = entry.approval.details?.['sandbox'];
      if (typeof sandbox === 'string' && sandbox) {
        approval.appendChild(el('div', 'akl-quiet', `sandbox: ${sandbox}`));
      }
      approval.appendChild(answerControls(entry.approval, live));
    } else {
      approval.appendChild(outcomeLine(entry.approval, running));
    }
    // files/ on an object store: where the file goes, also once answered (as run_html.py)
    const where = entry.approval.details?.['where'];
    if (typeof where === 'string' && where) {
      approval.appendChild(el('div', 'akl-quiet', `where: ${where}`));
    }
    body.appendChild(approval);
  }
  const result = resultView(entry);
  if (result) {
    body.appendChild(result);
  }
  const ledger = ledgerLine(entry);
  if (ledger) {
    body.appendChild(ledger);
  }
  card.appendChild(body);
  return card;
}

/** A question (or an approval outside any card) and how it ended. */
export function questionView(
  question: IQuestionEntry,
  running: boolean,
  live: ILiveControls | null = null,
  inCard = false
): HTMLElement {
  const box = el('div', inCard ? 'akl-question akl-in-card' : 'akl-question');
  box.dataset.key = `question:${question.question_id}`;
  const line = el('div', 'akl-question-text');
  // In its call's card (a team member's too, in that member's run) the card says whose.
  const label = inCard ? (question.approval ? 'Approval' : 'Question') : questionLabel(question);
  const labelSpan = el('span', 'akl-label', `${label}: `);
  const agent = inCard ? null : askerId(question);
  if (agent) {
    labelSpan.title = agent; // the id for who looks for it, never the words
  }
  line.appendChild(labelSpan);
  withCode(line, question.question);
  box.appendChild(line);
  const waitingNow = question.source === null || question.source === undefined;
  // The options once: as buttons while live, else as words until answered.
  if (question.options && !question.approval && !(waitingNow && live)) {
    box.appendChild(el('div', 'akl-quiet', `options: ${question.options.join(' · ')}`));
  }
  const details = question.details;
  const waiting = question.source === null || question.source === undefined;
  const tool = typeof details?.['tool'] === 'string' ? details['tool'] : undefined;
  if (question.approval && live && waiting) {
    box.appendChild(exactView(live.exact(question.question_id), tool));
  } else if (question.approval && details && 'arguments' in details) {
    const args = argumentsTable(details['arguments'], tool);
    if (args) {
      box.appendChild(args);
    }
  }
  const diff = question.approval ? details?.['diff'] : undefined;
  if (typeof diff === 'string' && diff) {
    box.appendChild(diffView(diff));
  }
  box.appendChild(outcomeLine(question, running, !!live));
  if (live && waiting) {
    box.appendChild(answerControls(question, live));
  }
  return box;
}

function header(state: IRunState, live: ILiveControls | null): HTMLElement {
  const head = el('div', 'akl-header');
  const status = el('span', 'akl-status', statusWords(state));
  status.dataset.status = state.status;
  head.appendChild(status);
  if (state.elapsed_ms !== null && state.elapsed_ms !== undefined) {
    head.appendChild(el('span', 'akl-elapsed', seconds(state.elapsed_ms)));
  }
  head.appendChild(el('span', 'akl-model akl-quiet', modelWords(state)));
  if (live) {
    const stopping = live.sending.has('stop');
    const stop = button(
      stopping ? 'Stopping…' : 'Stop',
      'jp-mod-warn agent-kernel-stop akl-stop',
      'Stop this run',
      () => live.stop(),
      'stop'
    );
    stop.disabled = stopping || !live.connected;
    head.appendChild(stop);
    const note = live.notes.get('stop');
    if (note) {
      head.appendChild(el('span', 'akl-note', note));
    }
  }
  return head;
}

/** A short fingerprint of a text (to tell one answer's text from another's). */
export function textKey(text: string): string {
  let hash = 0;
  for (let i = 0; i < text.length; i++) {
    hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  }
  return `${text.length}.${(hash >>> 0).toString(36)}`;
}

function entryView(
  entry: Entry,
  state: IRunState,
  markdown: MarkdownRenderer,
  live: ILiveControls | null,
  index = 0
): HTMLElement {
  const running = state.status === 'running';
  switch (entry.kind) {
    case 'text': {
      const host = el('div', 'akl-text jp-RenderedHTMLCommon jp-RenderedMarkdown');
      // Rendered Markdown is kept as it is while its text is the same (patch.ts).
      host.dataset.opaque = '';
      host.dataset.key = `text:${index}:${textKey(entry.text)}`;
      void markdown(host, entry.text);
      return host;
    }
    case 'tool':
      return toolCard(entry, running, live);
    case 'question':
      return questionView(entry, running, live);
    case 'notice': {
      const notice = el('div', 'akl-notice', entry.text);
      notice.dataset.level = entry.level;
      return notice;
    }
    case 'console':
      return block(entry.text, 'akl-console');
    case 'error': {
      const error = el('div', 'akl-error');
      error.appendChild(el('span', 'akl-label', 'Error: '));
      error.appendChild(document.createTextNode(entry.text));
      return error;
    }
    case 'agent':
      return agentView(entry, state, markdown, live);
    default:
      return el('div', 'akl-quiet', `(an entry this version cannot show: ${compact(entry)})`);
  }
}

/** Does anything in these entries (nested runs too) wait for the person's answer? */
function waitsForPerson(entries: Entry[]): boolean {
  return entries.some(entry => {
    switch (entry.kind) {
      case 'tool':
        return entry.state === 'waiting';
      case 'question':
        return entry.source === null || entry.source === undefined;
      case 'agent':
        return waitsForPerson(entry.entries ?? []);
      default:
        return false;
    }
  });
}

/** A Planner's or Worker's run inside the Teller's: folded, open while it runs. */
function agentView(
  entry: IAgentEntry,
  state: IRunState,
  markdown: MarkdownRenderer,
  live: ILiveControls | null
): HTMLElement {
  const box = el('details', 'akl-agent');
  box.dataset.agentRole = entry.role;
  box.dataset.state = entry.status;
  box.dataset.key = `agent:${entry.agent_id}:${entry.task_id}`;
  // Open while it runs, or while a question inside it waits for the person (a Worker's
  // approval in the card of its call, under a Planner that has finished its own turn).
  box.open = entry.status === 'running' || waitsForPerson(entry.entries ?? []);
  box.dataset.defaultOpen = String(box.open);
  const summary = el('summary', 'akl-agent-summary');
  // Named by its work; its id (`worker-3`) is the name's tooltip.
  const parts = [workName(entry.prompt, entry.role), STATUS_TEXT[entry.status] ?? String(entry.status)];
  if (entry.elapsed_ms !== null && entry.elapsed_ms !== undefined) {
    parts.push(seconds(entry.elapsed_ms));
  }
  const name = el('b', 'akl-agent-name', parts.join(' · '));
  name.title = entry.agent_id;
  summary.appendChild(name);
  if (!workName(entry.prompt, entry.role).startsWith(`${entry.prompt.trim()} · `)) {
    // the whole task, quietly, when the name holds only its first words
    summary.appendChild(document.createTextNode(' '));
    summary.appendChild(el('span', 'akl-quiet', compact(entry.prompt)));
  }
  box.appendChild(summary);
  (entry.entries ?? []).forEach((inner, i) => {
    box.appendChild(entryView(inner, state, markdown, live, i));
  });
  return box;
}

/** A live run this page cannot reach (reloaded, the kernel gone): what a person can do. */
export interface ILostRun {
  /** Why, in words. */
  message: string;
  /** Run `%agent_stop` in the kernel; null when there is no kernel to send it to. */
  stop: (() => void) | null;
}

/** The words for a run this page cannot reach, and the Stop that sends `%agent_stop`. */
function lostView(lost: ILostRun): HTMLElement {
  const box = el('div', 'akl-lost akl-note');
  box.dataset.key = 'lost';
  withCode(box, lost.message);
  if (lost.stop) {
    const stop = lost.stop;
    box.appendChild(document.createTextNode(' '));
    box.appendChild(
      button('Stop', 'jp-mod-warn akl-lost-stop', 'Run %agent_stop in the kernel', stop, 'lost-stop')
    );
  }
  return box;
}

/** The whole run, as one element; `announce`: what the run's polite live region says. */
export function runView(
  state: IRunState,
  markdown: MarkdownRenderer,
  live: ILiveControls | null = null,
  announce = '',
  lost: ILostRun | null = null
): HTMLElement {
  state = endedWaits(state); // an ended run's waits read as not answered
  const root = el('div', 'akl-run');
  root.dataset.status = state.status;
  root.dataset.runId = state.run_id;
  const region = el('div', 'akl-live-region', announce);
  region.dataset.key = 'live-region';
  region.setAttribute('role', 'status');
  region.setAttribute('aria-live', 'polite');
  root.appendChild(region);
  root.appendChild(header(state, live));
  if (lost) {
    root.appendChild(lostView(lost));
  }
  const prompt = el('div', 'akl-prompt');
  prompt.appendChild(el('span', 'akl-label', 'Prompt: '));
  prompt.appendChild(document.createTextNode(state.prompt));
  root.appendChild(prompt);
  const loading = state.loading;
  if (loading && loading.seconds !== null && loading.seconds !== undefined) {
    root.appendChild(
      el('div', 'akl-quiet', `loaded ${loading.what} in ${loading.seconds.toFixed(1)} s`)
    );
  }
  (state.entries ?? []).forEach((entry, i) => {
    root.appendChild(entryView(entry, state, markdown, live, i));
  });
  return root;
}
