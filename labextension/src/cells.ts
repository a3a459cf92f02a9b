/**
 * The notebook's cells for the agent in its kernel: the kernel asks, this notebook panel
 * answers (agent_kernel/notebook/cells_channel.py is the kernel's side).
 *
 * The kernel sends `{cells: op, request_id, run_id, ...}` on the probe comm of the panel
 * whose kernel it is (controls.ts); we do the work on this panel's own model and reply
 * `{action: "cells_reply", reply_to, ok, message, ...}`:
 * - `read`: cells from `start`, `count` of them (or the one cell whose id is `cell_id`):
 *   id, source, outputs (text, MIME types, error parts), execution count, provenance, and
 *   which cell's output holds the asking run.
 * - `insert`: a new cell (below the run's own cell unless an index or `below_cell_id` is
 *   given); the reply names its id.
 * - `edit`: a new source for a cell, only if its source is still `expected` (what the
 *   person approved a diff of).
 * - `run`: execute a code cell whose source is still `expected`, in this panel's session,
 *   as JupyterLab's own run does; the reply comes once the execution has finished.
 * `edit` and `run` name their cell by `cell_id` (the model's id, which nbformat 4.5 saves
 * as the cell's `id`), else by `index`. An id no single cell has is a failure, never a
 * position: positions move when cells are inserted or deleted, ids stay with their cell.
 * Cells the agent inserted or edited keep `metadata.agent_kernel` (run, ledger record,
 * action, time) and carry a quiet marker: a class and a small "written by the agent"
 * label, drawn again from the metadata when the notebook is reopened.
 * Everything from a cell or the kernel is data: sources are set as text, labels are
 * textContent, nothing becomes HTML.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

import { RUN_MIME } from './state';

export const AGENT_CELL_CLASS = 'akl-agent-cell';
export const MARK_CLASS = 'akl-agent-mark';
export const MARK_TEXT = 'written by the agent';
const METADATA_KEY = 'agent_kernel';
const SOURCE_CAP = 20000;
const FULL_SOURCE_CAP = 200000;
const OUTPUT_CAP = 20000;
const MAX_COUNT = 50;
/** nbformat 4.5's cell id shape; the kernel checks the ids we send it against it too. */
const CELL_ID = /^[A-Za-z0-9_-]{1,64}$/;

type Json = { [key: string]: unknown };

interface IOutputLike {
  toJSON(): Json;
}

interface ICellModelLike {
  readonly type: string;
  readonly sharedModel: {
    getSource(): string;
    setSource(source: string): void;
    getId(): string;
    transact(fn: () => void, undoable?: boolean, origin?: unknown): void;
  };
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
  // code cells only
  executionCount?: number | null;
  executionState?: string;
  trusted?: boolean;
  readonly outputs?: { readonly length: number; get(index: number): IOutputLike };
  clearExecution?(): void;
}

export interface ICellWidgetLike {
  readonly model: ICellModelLike;
  readonly node: HTMLElement;
  readonly isDisposed: boolean;
  addClass(name: string): void;
  removeClass(name: string): void;
  // code cells only
  readonly outputArea?: {
    future: Kernel.IShellFuture<KernelMessage.IExecuteRequestMsg, KernelMessage.IExecuteReplyMsg>;
  };
}

export interface INotebookLike {
  readonly widgets: ReadonlyArray<ICellWidgetLike>;
  readonly model: {
    readonly sharedModel: {
      insertCell(index: number, cell: { cell_type: string; source: string; metadata: Json }): { getId(): string };
    };
  } | null;
  readonly modelContentChanged: { connect(slot: () => void): boolean };
}

/** What the notebook replies to one request (sent back as `cells_reply`). */
interface ICellsReply {
  ok: boolean;
  message: string;
  [key: string]: unknown;
}

function fail(message: string): ICellsReply {
  return { ok: false, message };
}

function text(value: unknown): string {
  if (typeof value === 'string') {
    return value;
  }
  return Array.isArray(value) ? value.filter(v => typeof v === 'string').join('') : '';
}

function capped(value: string, cap: number): string {
  return value.length > cap ? value.slice(0, cap) : value;
}

/** One saved output as plain data: type, text, MIME types, error parts. */
function outputData(output: Json): Json {
  const kind = String(output['output_type'] ?? '');
  if (kind === 'stream') {
    return { output_type: kind, text: capped(text(output['text']), OUTPUT_CAP) };
  }
  if (kind === 'error') {
    const traceback = Array.isArray(output['traceback']) ? output['traceback'] : [];
    return {
      output_type: kind,
      ename: capped(String(output['ename'] ?? ''), 500),
      evalue: capped(String(output['evalue'] ?? ''), 4000),
      traceback: traceback.slice(-40).map(line => capped(String(line), 2000))
    };
  }
  const data = (output['data'] ?? {}) as Json;
  const found: Json = { output_type: kind, mimes: Object.keys(data) };
  if ('text/plain' in data && !(RUN_MIME in data)) {
    found['text'] = capped(text(data['text/plain']), OUTPUT_CAP);
  }
  return found;
}

/** The provenance the kernel sent, as plain strings (nothing else is kept). */
function provenanceOf(value: unknown): Json | null {
  if (!value || typeof value !== 'object') {
    return null;
  }
  const given = value as Json;
  const kept: Json = {};
  for (const key of ['run_id', 'ledger_record', 'action', 'at']) {
    if (typeof given[key] === 'string') {
      kept[key] = given[key];
    }
  }
  return kept['action'] === 'inserted' || kept['action'] === 'edited' ? kept : null;
}

/** The cells of one notebook panel, as the kernel's agent reads, writes and runs them. */
export class NotebookCells {
  constructor(notebook: INotebookLike, sessionContext: ISessionContext) {
    this._notebook = notebook;
    this._session = sessionContext;
    notebook.modelContentChanged.connect(() => this.markSoon());
    this.markSoon();
  }

  /** Carry out one request of the kernel's; the reply never throws. */
  async handle(request: Json): Promise<ICellsReply> {
    try {
      switch (request['cells']) {
        case 'read':
          return this._read(request);
        case 'insert':
          return this._insert(request);
        case 'edit':
          return this._edit(request);
        case 'run':
          return await this._run(request);
        default:
          return fail(`The notebook does not know the request ${String(request['cells']).slice(0, 40)}.`);
      }
    } catch (reason) {
      console.warn('agent-kernel: a cell request failed', reason);
      return fail('The notebook could not do it (see the browser console).');
    }
  }

  /** Draw the marker on every cell whose metadata says the agent wrote it. */
  mark(): void {
    for (const cell of this._notebook.widgets) {
      if (cell.isDisposed) {
        continue;
      }
      const written = provenanceOf(cell.model.getMetadata(METADATA_KEY)) !== null;
      const label = cell.node.querySelector(`:scope > .${MARK_CLASS}`);
      // Last in the cell's node: Lumino places the cell's own parts by child index, so
      // anything before them would shift them; CSS draws the label first.
      if (written) {
        cell.addClass(AGENT_CELL_CLASS);
        if (!label) {
          const mark = document.createElement('div');
          mark.className = MARK_CLASS;
          mark.appendChild(document.createElement('span')).textContent = MARK_TEXT;
          cell.node.appendChild(mark);
        }
      } else {
        cell.removeClass(AGENT_CELL_CLASS);
        label?.remove();
      }
    }
  }

  markSoon(): void {
    if (this._markPending) {
      return;
    }
    this._markPending = true;
    window.requestAnimationFrame(() => {
      this._markPending = false;
      this.mark();
    });
  }

  /** The position of the cell whose output holds the run `runId` (-1: none). */
  agentCell(runId: unknown): number {
    if (typeof runId !== 'string' || !runId) {
      return -1;
    }
    const cells = this._notebook.widgets;
    for (let i = cells.length - 1; i >= 0; i--) {
      const outputs = cells[i].model.outputs;
      for (let j = 0; outputs && j < outputs.length; j++) {
        const data = (outputs.get(j).toJSON()['data'] ?? {}) as Json;
        const run = data[RUN_MIME];
        // a team's members run inside the Teller's output: their ids are in its state
        if (run && JSON.stringify(run).includes(JSON.stringify(runId))) {
          return i;
        }
      }
    }
    return -1;
  }

  /** A person's click on "Insert as a cell below" in an answer: a code cell holding
   * `source` below the run's cell, unmarked (the person put it there); false if no cell. */
  insertBelowRun(runId: string, source: string): boolean {
    const model = this._notebook.model;
    const agent = this.agentCell(runId);
    if (!model || agent < 0) {
      return false;
    }
    model.sharedModel.insertCell(agent + 1, { cell_type: 'code', source, metadata: {} });
    return true;
  }

  /** The positions of the cells whose id is `cellId` (null: not an id's shape). */
  private _positionsOf(cellId: unknown): number[] | null {
    if (typeof cellId !== 'string' || !CELL_ID.test(cellId)) {
      return null;
    }
    const found = [];
    const cells = this._notebook.widgets;
    for (let i = 0; i < cells.length; i++) {
      if (cells[i].model.sharedModel.getId() === cellId) {
        found.push(i);
      }
    }
    return found;
  }

  /** The position of the one cell whose id is `cellId`, or why there is none. */
  private _positionOf(cellId: unknown): number | string {
    const found = this._positionsOf(cellId);
    if (found === null) {
      return 'That is not a cell id (1 to 64 letters, digits, - or _).';
    }
    if (found.length > 1) {
      return `${found.length} cells share that id (cells ${found.join(', ')}): name the cell by its position.`;
    }
    return found.length ? found[0] : 'No cell in the notebook has that id now; read the cells again.';
  }

  /** The cell a request names: by `cell_id` when it has one, else by `index`. */
  private _cellAt(request: Json): [ICellWidgetLike, number] | string {
    const cells = this._notebook.widgets;
    const index = request['cell_id'] !== undefined && request['cell_id'] !== null
      ? this._positionOf(request['cell_id'])
      : request['index'];
    if (typeof index === 'string') {
      return index;
    }
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= cells.length) {
      return `There is no cell at position ${String(index)}: the notebook has ${cells.length} cells.`;
    }
    return [cells[index], index];
  }

  private _read(request: Json): ICellsReply {
    const cells = this._notebook.widgets;
    let start = Math.max(0, Number(request['start']) || 0);
    let count = Math.min(MAX_COUNT, Math.max(1, Number(request['count']) || 20));
    if (request['cell_id'] !== undefined && request['cell_id'] !== null) {
      // one cell by its id; none (never a position) when no cell has it
      const found = this._positionOf(request['cell_id']);
      if (typeof found === 'string' && (this._positionsOf(request['cell_id'])?.length ?? 0) > 1) {
        return fail(found);
      }
      [start, count] = typeof found === 'number' ? [found, 1] : [cells.length, 0];
    }
    const cap = request['full'] === true ? FULL_SOURCE_CAP : SOURCE_CAP;
    const agent = this.agentCell(request['run_id']);
    const shown = [];
    for (let i = start; i < Math.min(cells.length, start + count); i++) {
      const model = cells[i].model;
      const outputs = [];
      for (let j = 0; model.outputs && j < model.outputs.length; j++) {
        outputs.push(outputData(model.outputs.get(j).toJSON()));
      }
      shown.push({
        index: i,
        id: model.sharedModel.getId(),
        kind: model.type,
        source: capped(model.sharedModel.getSource(), cap),
        execution_count: model.type === 'code' ? (model.executionCount ?? null) : null,
        outputs,
        runs_agent: i === agent,
        agent_kernel: provenanceOf(model.getMetadata(METADATA_KEY))
      });
    }
    return { ok: true, message: '', total: cells.length, agent_cell: agent < 0 ? null : agent, cells: shown };
  }

  private _insert(request: Json): ICellsReply {
    const model = this._notebook.model;
    const provenance = provenanceOf(request['provenance']);
    const kind = request['kind'] === 'markdown' ? 'markdown' : 'code';
    if (!model || !provenance || typeof request['source'] !== 'string') {
      return fail('The notebook could not add the cell (the request was incomplete).');
    }
    const length = this._notebook.widgets.length;
    let index: number;
    if (request['below_cell_id'] !== undefined && request['below_cell_id'] !== null) {
      const below = this._positionOf(request['below_cell_id']);
      if (typeof below === 'string') {
        return fail(`${below} The cell was not added.`);
      }
      index = below + 1;
    } else if (typeof request['index'] === 'number' && Number.isInteger(request['index'])) {
      index = Math.min(Math.max(0, request['index']), length);
    } else {
      const agent = this.agentCell(request['run_id']);
      index = agent < 0 ? length : agent + 1;
    }
    const made = model.sharedModel.insertCell(index, {
      cell_type: kind,
      source: request['source'],
      metadata: { [METADATA_KEY]: provenance }
    });
    this.mark();
    return { ok: true, message: '', index, id: made.getId() };
  }

  private _edit(request: Json): ICellsReply {
    const found = this._cellAt(request);
    const provenance = provenanceOf(request['provenance']);
    if (typeof found === 'string') {
      return fail(`${found} Nothing was edited.`);
    }
    const [cell, index] = found;
    if (!provenance || typeof request['source'] !== 'string') {
      return fail('The notebook could not edit the cell (the request was incomplete).');
    }
    if (cell.model.sharedModel.getSource() !== request['expected']) {
      return fail(`Cell ${index} changed after it was read, so it was not edited; read it again.`);
    }
    cell.model.sharedModel.setSource(request['source']);
    cell.model.setMetadata(METADATA_KEY, provenance);
    this.mark();
    return { ok: true, message: '', index };
  }

  private async _run(request: Json): Promise<ICellsReply> {
    const found = this._cellAt(request);
    if (typeof found === 'string') {
      return fail(`${found} Nothing was run.`);
    }
    const [cell, index] = found;
    const model = cell.model;
    const source = model.sharedModel.getSource();
    if (model.type !== 'code' || !cell.outputArea) {
      return fail(`Cell ${index} is not a code cell.`);
    }
    if (source !== request['expected']) {
      return fail(`Cell ${index} changed after it was approved, so it was not run.`);
    }
    const kernel = this._session.session?.kernel;
    if (!kernel) {
      return fail('This notebook has no kernel to run the cell.');
    }
    // As JupyterLab's own run does (CodeCell.execute), except that it trusts the outputs:
    // what the agent's code displays is sanitized, its scripts never run.
    model.sharedModel.transact(() => model.clearExecution?.(), false);
    model.trusted = false;
    model.executionState = 'running';
    const future = kernel.requestExecute(
      { code: source, stop_on_error: true },
      false,
      { cellId: model.sharedModel.getId() }
    );
    cell.outputArea.future = future;
    let reply: KernelMessage.IExecuteReplyMsg;
    try {
      reply = await future.done;
    } finally {
      model.executionState = 'idle';
    }
    const count = reply.content.execution_count;
    model.executionCount = typeof count === 'number' ? count : null;
    const outputs = [];
    for (let j = 0; model.outputs && j < model.outputs.length; j++) {
      outputs.push(outputData(model.outputs.get(j).toJSON()));
    }
    return {
      ok: true,
      message: '',
      index,
      status: reply.content.status,
      execution_count: model.executionCount ?? null,
      outputs
    };
  }

  private _notebook: INotebookLike;
  private _session: ISessionContext;
  private _markPending = false;
}
