/**
 * A run drawn with DOM calls from its saved state: data in, elements out.
 *
 * Every string from the model, a tool or a person goes in through
 * `textContent` (never `innerHTML`); only the answer's Markdown goes through
 * JupyterLab's sanitizing Markdown renderer, handed in as `markdown`. Colours
 * come from the stylesheet (style/base.css), which uses theme variables only.
 */

import {
  Entry,
  IQuestionEntry,
  IRunState,
  IToolEntry
} from './state';
import { clock, modelWords, outcome, seconds, statusWords } from './words';

/** Renders Markdown into a host element (sanitized), or shows it as text. */
export type MarkdownRenderer = (host: HTMLElement, source: string) => Promise<void>;

const MARKS: { [state: string]: string } = { running: '◌', waiting: '?', ok: '✓', failed: '✗' };
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

/** Arguments as key/value rows; keys whose value is null are left out. */
export function argumentsTable(args: unknown): HTMLElement | null {
  if (!isRecord(args)) {
    return args === null || args === undefined ? null : block(compact(args, 4000));
  }
  const rows = Object.entries(args).filter(([, v]) => v !== null && v !== undefined);
  if (!rows.length) {
    return null;
  }
  const table = el('table', 'akl-args');
  for (const [key, value] of rows) {
    const row = table.insertRow();
    row.appendChild(el('th', '', key));
    const cell = row.insertCell();
    if (typeof value === 'string' && value.includes('\n')) {
      cell.appendChild(block(value));
    } else {
      cell.textContent = compact(value, 4000);
    }
  }
  return table;
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

/** A tool's result drawn by its kind: text, JSON, a table of records, or an error. */
export function resultView(entry: IToolEntry): HTMLElement | null {
  const result = entry.result;
  const box = el('div', 'akl-result');
  box.dataset.kind = entry.result_kind ?? '';
  switch (entry.result_kind) {
    case 'error':
      box.appendChild(el('p', 'akl-error-text', entry.error || 'The call failed.'));
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
        const notes = ['truncated', 'timed_out'].filter(n => result[n]);
        if (notes.length) {
          box.appendChild(el('div', 'akl-quiet', notes.join(', ').replace('_', ' ')));
        }
        if (!box.childNodes.length) {
          box.appendChild(el('div', 'akl-quiet', 'no output'));
        }
      }
      return box;
    case 'table': {
      const records = recordsOf(result);
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

function outcomeLine(question: IQuestionEntry, running: boolean): HTMLElement {
  const line = el('div', 'akl-outcome', outcome(question, running));
  line.dataset.source = question.source ?? 'waiting';
  if (question.source === null && running) {
    line.appendChild(
      el('span', 'akl-quiet', ` (no answer after ${Math.round(question.timeout)} s ends it)`)
    );
  }
  return line;
}

/** One tool call: a card whose summary line says what it did, details on demand. */
export function toolCard(entry: IToolEntry, running: boolean): HTMLElement {
  const card = el('details', 'akl-tool');
  card.dataset.state = entry.state;
  card.open = entry.state === 'waiting';
  const summary = el('summary', 'akl-tool-summary');
  summary.appendChild(el('span', `akl-mark akl-mark-${entry.state}`, MARKS[entry.state] ?? ''));
  summary.appendChild(el('span', 'akl-tool-name', entry.tool));
  summary.appendChild(document.createTextNode(' · '));
  summary.appendChild(withCode(el('span', 'akl-summary'), entry.summary));
  card.appendChild(summary);
  const body = el('div', 'akl-tool-body');
  const args = argumentsTable(entry.arguments);
  if (args) {
    body.appendChild(args);
  }
  if (entry.approval) {
    const approval = el('div', 'akl-approval');
    approval.appendChild(el('span', 'akl-label', 'Approval: '));
    approval.appendChild(outcomeLine(entry.approval, running));
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
export function questionView(question: IQuestionEntry, running: boolean): HTMLElement {
  const box = el('div', 'akl-question');
  const line = el('div', 'akl-question-text');
  line.appendChild(el('span', 'akl-label', question.approval ? 'Approval: ' : 'Question: '));
  withCode(line, question.question);
  box.appendChild(line);
  if (question.options && !question.approval) {
    box.appendChild(el('div', 'akl-quiet', `options: ${question.options.join(' · ')}`));
  }
  const details = question.details;
  if (question.approval && details && 'arguments' in details) {
    const args = argumentsTable(details['arguments']);
    if (args) {
      box.appendChild(args);
    }
  }
  box.appendChild(outcomeLine(question, running));
  return box;
}

function header(state: IRunState): HTMLElement {
  const head = el('div', 'akl-header');
  const status = el('span', 'akl-status', statusWords(state));
  status.dataset.status = state.status;
  head.appendChild(status);
  if (state.elapsed_ms !== null && state.elapsed_ms !== undefined) {
    head.appendChild(el('span', 'akl-elapsed', seconds(state.elapsed_ms)));
  }
  head.appendChild(el('span', 'akl-model akl-quiet', modelWords(state)));
  return head;
}

function entryView(entry: Entry, state: IRunState, markdown: MarkdownRenderer): HTMLElement {
  const running = state.status === 'running';
  switch (entry.kind) {
    case 'text': {
      const host = el('div', 'akl-text jp-RenderedHTMLCommon jp-RenderedMarkdown');
      void markdown(host, entry.text);
      return host;
    }
    case 'tool':
      return toolCard(entry, running);
    case 'question':
      return questionView(entry, running);
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
    default:
      return el('div', 'akl-quiet', `(an entry this version cannot show: ${compact(entry)})`);
  }
}

/** The whole run, as one element. */
export function runView(state: IRunState, markdown: MarkdownRenderer): HTMLElement {
  const root = el('div', 'akl-run');
  root.dataset.status = state.status;
  root.dataset.runId = state.run_id;
  root.appendChild(header(state));
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
  for (const entry of state.entries ?? []) {
    root.appendChild(entryView(entry, state, markdown));
  }
  return root;
}
