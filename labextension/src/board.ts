/**
 * The team board (`%agent_team`) drawn from `application/vnd.agent-kernel.board.v1+json`:
 * the board's snapshot (agent_kernel/views/board.py `snapshot`) and which rows have live
 * controls. Each running row carries its own Stop, each queued or held task and each
 * trigger its own Cancel, in the row it acts on (never a list apart).
 *
 * The same structure and classes as the HTML fallback (views/board.py `board_html`), so
 * a saved notebook reads alike in every frontend; the board's CSS is in the extension's
 * stylesheet (a `<style>` in text/html is stripped by JupyterLab's sanitizer). Every
 * string goes in as text. Updated in place (patch.ts): a button keeps its identity,
 * focus and pressed state while the board redraws. Buttons exist only while the kernel
 * that made them answers (controls.ts); reopened without it, a row says which
 * `%agent_team` line would act, and has no button.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import type { KernelControls } from './controls';
import { patch } from './patch';
import { localDate, workName } from './words';

export const BOARD_MIME = 'application/vnd.agent-kernel.board.v1+json';

type Dict = { [key: string]: unknown };

/** A row's one button: Stop (running task) or Cancel (queued or held task, trigger). */
interface IBoardRow {
  id: string;
  op: 'cancel' | 'stop';
  label: string;
}

interface IBoardRecord {
  version: 1;
  state: Dict;
  controls: 'extension' | 'none';
  rows: IBoardRow[];
}

function isRecord(data: unknown): data is IBoardRecord {
  const r = data as Partial<IBoardRecord> | null;
  return (
    !!r &&
    r.version === 1 &&
    typeof r.state === 'object' &&
    r.state !== null &&
    Array.isArray(r.rows)
  );
}

function text(value: unknown): string {
  return value === null || value === undefined ? '' : String(value);
}

function list(value: unknown): Dict[] {
  return Array.isArray(value) ? value.filter(v => typeof v === 'object' && v !== null) : [];
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  content?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (content !== undefined) {
    node.textContent = content;
  }
  return node;
}

/** `12:04:31 CET` today, with the date on another day; `-` for none (as views/board.py). */
function when(stamp: unknown, now: Date): string {
  const value = text(stamp);
  if (!value || isNaN(new Date(value).getTime())) {
    return '-';
  }
  const moment = new Date(value);
  const full = localDate(value); // `2026-11-23 17:19 CET`
  const two = (n: number) => String(n).padStart(2, '0');
  const zone = full.split(' ').slice(2).join(' ');
  const time = `${two(moment.getHours())}:${two(moment.getMinutes())}:${two(moment.getSeconds())}`;
  const sameDay = moment.toDateString() === now.toDateString();
  return `${sameDay ? '' : full.split(' ')[0] + ' '}${time}${zone ? ' ' + zone : ''}`;
}

function capital(word: string): string {
  return word ? word[0].toUpperCase() + word.slice(1) : word;
}

/** Who, in a word (`Planner` for `planner-3`, `Trigger desk` for `team-desk`; the id is
 * the cell's tooltip), as views/board.py's `_who`. */
function who(agent: unknown): string {
  const value = text(agent).trim();
  if (!value) {
    return '-';
  }
  if (value === 'team-desk') {
    return 'Trigger desk';
  }
  const at = value.lastIndexOf('-');
  const head = at > 0 && /^\d+$/.test(value.slice(at + 1)) ? value.slice(0, at) : value;
  return capital(head.replace(/_/g, ' '));
}

function cell(content: string | Node, className = '', title = ''): HTMLTableCellElement {
  const td = el('td', className);
  if (typeof content === 'string') {
    td.textContent = content;
  } else {
    td.appendChild(content);
  }
  if (title) {
    td.title = title;
  }
  return td;
}

function table(head: string[], rows: HTMLTableRowElement[], key: string): HTMLTableElement {
  const node = el('table');
  node.dataset.key = key;
  const tr = el('tr');
  for (const name of head) {
    const th = el('th', name === 'Priority' ? 'ak-num' : '', name);
    tr.appendChild(th);
  }
  node.appendChild(el('thead')).appendChild(tr);
  const body = el('tbody');
  body.append(...rows);
  node.appendChild(body);
  return node;
}

function section(title: string, count: number | null, body: Node, key: string): HTMLElement {
  const box = el('div', 'ak-block');
  box.dataset.key = key;
  box.appendChild(el('div', 'ak-section', count === null ? title : `${title} · ${count}`));
  box.appendChild(body);
  return box;
}

function folded(title: string, count: number, body: Node, key: string): HTMLElement {
  const box = el('details', 'ak-fold');
  box.dataset.key = key;
  box.appendChild(el('summary', 'ak-section', `${title} · ${count}`));
  box.appendChild(body);
  return box;
}

function none(words: string): HTMLElement {
  return el('div', 'ak-muted', words);
}

function counts(state: Dict): string {
  const queues = (state.queues ?? {}) as Dict;
  const queued = Object.values(queues).reduce<number>((n, rows) => n + list(rows).length, 0);
  const words = [`${list(state.running).length} running`, `${queued} queued`];
  const triggers = list(state.triggers).length;
  if (triggers) {
    words.push(`${triggers} trigger(s)`);
  }
  const ended = (state.ended ?? {}) as { [status: string]: number };
  const names = Object.keys(ended).sort();
  if (names.length) {
    words.push('ended: ' + names.map(s => `${ended[s]} ${s}`).join(', '));
  }
  return words.join(', ');
}

/** What a row's button does, for the rows the kernel said are live. */
export interface IBoardActions {
  /** The row's button (kept across redraws), or null when it has none live. */
  button(row: IBoardRow): HTMLElement | null;
  /** The words in place of a button: a line that does the same, or a note. */
  note(row: IBoardRow): string;
}

/** The board as DOM, from the record; `actions` gives each live row its button. */
export function boardView(record: IBoardRecord, actions: IBoardActions): HTMLElement {
  const state = record.state;
  const now = isNaN(new Date(text(state.as_of)).getTime()) ? new Date() : new Date(text(state.as_of));
  const rows = new Map(record.rows.filter(r => r && typeof r.id === 'string').map(r => [r.id, r]));
  const root = el('div', 'agent-kernel-team-board');
  const header = el('div', 'ak-head');
  header.dataset.key = 'head';
  const title = el('b', '', 'Team');
  header.append(title, ` · ${counts(state)} `, el('span', 'ak-muted', `· as of ${when(state.as_of, now)}`));
  root.appendChild(header);
  const link = text(state.dashboard);
  if (/^https?:\/\//.test(link)) {
    // Workers on a Dask cluster (docs/scale.md): an http(s) link only, never a script URL
    const said = el('div', 'ak-muted agent-kernel-dashboard', 'Workers run on a Dask cluster: ');
    const a = el('a', '', 'its dashboard');
    a.setAttribute('href', link);
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener noreferrer');
    said.appendChild(a);
    said.dataset.key = 'dashboard';
    root.appendChild(said);
  }
  if (state.note) {
    const note = el('div', 'ak-warn', text(state.note));
    note.dataset.key = 'note';
    root.appendChild(note);
  }
  for (const [i, line] of (Array.isArray(state.outcomes) ? state.outcomes : []).entries()) {
    const said = el('div', 'ak-muted agent-kernel-outcome', text(line));
    said.dataset.key = `outcome-${i}`;
    root.appendChild(said);
  }

  /** The cell holding a row's button (or the words that stand for it). */
  const control = (id: string): HTMLTableCellElement => {
    const td = el('td', 'ak-act');
    const row = rows.get(id);
    if (!row) {
      return td;
    }
    const button = actions.button(row);
    if (button) {
      td.appendChild(button);
    } else {
      td.appendChild(el('span', 'ak-muted ak-hint', actions.note(row)));
    }
    return td;
  };
  const live = record.rows.length > 0;
  const withAct = (head: string[]) => (live ? [...head, ''] : head);

  const running = list(state.running);
  root.appendChild(
    section(
      'Running',
      running.length,
      running.length
        ? table(
            withAct(['Agent', 'Priority', 'Prompt', 'Started']),
            running.map(r => {
              const id = text(r.id);
              const tr = el('tr', 'agent-kernel-team-task');
              tr.dataset.key = id;
              tr.dataset.taskId = id;
              tr.dataset.status = 'running';
              tr.title = id;
              const agent = cell(capital(text(r.role)), '', text(r.agent));
              if (r.waiting) {
                agent.append(el('br'), el('span', 'ak-warn agent-kernel-team-waiting', text(r.waiting)));
              }
              if (r.where) {
                agent.append(el('br'), el('span', 'ak-muted agent-kernel-team-where', text(r.where)));
              }
              tr.append(
                agent,
                cell(text(r.priority), 'ak-num'),
                cell(text(r.prompt), 'ak-prompt'),
                cell(when(r.started, now), 'ak-time', text(r.started))
              );
              if (live) {
                tr.appendChild(control(id));
              }
              return tr;
            }),
            'running'
          )
        : none('Nothing is running.'),
      'running'
    )
  );

  const queues = (state.queues ?? {}) as Dict;
  const limits = (state.limits ?? {}) as Dict;
  const titles: { [name: string]: string } = {
    planner: `Planner queue · at most ${text(limits.max_planners) || '?'} run at once`,
    worker: `Worker queue · at most ${text(limits.max_workers) || '?'} run at once, in the order they start`,
    held: "Held · a Planner's delegations, queued when its run ends"
  };
  for (const name of ['planner', 'worker', 'held']) {
    const found = list(queues[name]);
    if (!found.length && name === 'held') {
      continue;
    }
    const body = found.length
      ? table(
          withAct(['Priority', 'Role', 'Prompt', 'From', 'Created']),
          found.map(r => {
            const id = text(r.id);
            const tr = el('tr', 'agent-kernel-team-task');
            tr.dataset.key = id;
            tr.dataset.taskId = id;
            tr.dataset.status = text(r.status);
            tr.title = id;
            const role = cell(capital(text(r.role).replace(/_/g, ' ')));
            role.append(el('br'), el('span', 'ak-muted', text(r.status)));
            tr.append(
              cell(text(r.priority), 'ak-num'),
              role,
              cell(text(r.prompt), 'ak-prompt'),
              cell(who(r.by), '', text(r.by)),
              cell(when(r.created, now), 'ak-time', text(r.created))
            );
            if (live) {
              tr.appendChild(control(id));
            }
            return tr;
          }),
          `queue-${name}`
        )
      : none('Empty.');
    root.appendChild(section(titles[name], found.length, body, `queue-${name}`));
  }

  const triggers = list(state.triggers);
  if (triggers.length) {
    root.appendChild(
      section(
        'Triggers',
        triggers.length,
        table(
          withAct(['Status', 'Schedule', 'Priority', 'Prompt']),
          triggers.map(r => {
            const id = text(r.id);
            const tr = el('tr', 'agent-kernel-team-trigger');
            tr.dataset.key = id;
            tr.dataset.triggerId = id;
            tr.title = id;
            const schedule = cell(text(r.schedule));
            schedule.append(el('br'), el('span', 'ak-muted', text(r.type)));
            tr.append(
              cell(el('span', r.status === 'active' ? 'ak-ok' : 'ak-warn', text(r.status))),
              schedule,
              cell(text(r.priority), 'ak-num'),
              cell(text(r.prompt), 'ak-prompt')
            );
            if (live) {
              tr.appendChild(control(id));
            }
            return tr;
          }),
          'triggers'
        ),
        'triggers'
      )
    );
  }

  const agents = list(state.agents);
  root.appendChild(
    section(
      'Agents',
      agents.length,
      table(
        ['Agent', 'Working on'],
        agents.map(r => {
          const tr = el('tr', 'agent-kernel-team-agent');
          tr.dataset.key = text(r.id);
          tr.dataset.agentId = text(r.id);
          const task = text(r.task);
          // the role alone: the work it is on stands in the next column
          tr.append(
            cell(workName('', text(r.role)), '', text(r.id)),
            task ? cell(task, 'ak-prompt') : cell(el('span', 'ak-muted', 'idle'), 'ak-prompt')
          );
          return tr;
        }),
        'agents'
      ),
      'agents'
    )
  );

  const roles = list(state.roles);
  const made = roles.filter(r => !r.builtin);
  const shownRoles = [...roles.filter(r => r.builtin), ...made.slice(-20)];
  root.appendChild(
    folded(
      'Roles',
      roles.length,
      table(
        ['Role', 'Made by', 'Tools'],
        shownRoles.map(r => {
          const tr = el('tr', 'agent-kernel-team-role');
          tr.dataset.key = text(r.name);
          tr.dataset.builtin = String(!!r.builtin);
          const by = r.builtin
            ? cell(el('span', 'ak-muted', 'built-in'))
            : cell(who(r.createdBy), '', text(r.createdBy));
          if (!r.builtin) {
            by.append(el('br'), el('span', 'ak-muted', when(r.createdAt, now)));
          }
          const tools = Array.isArray(r.tools) ? r.tools.map(text) : [];
          const toolsCell = cell(`${tools.length}: `, 'ak-prompt');
          toolsCell.appendChild(
            el('span', 'ak-muted', tools.slice(0, 8).join(', ') + (tools.length > 8 ? ', …' : ''))
          );
          const name = el('td');
          name.appendChild(el('b', '', text(r.name)));
          tr.append(name, by, toolsCell);
          return tr;
        }),
        'roles'
      ),
      'roles'
    )
  );

  const messages = list(state.messages);
  if (messages.length) {
    root.appendChild(
      section(
        'Messages',
        messages.length,
        table(
          ['From', 'To', 'Message', 'Sent'],
          messages.map(r => {
            const tr = el('tr', 'agent-kernel-team-message');
            tr.append(
              cell(who(r.from), '', text(r.from)),
              cell(who(r.to), '', text(r.to)),
              cell(text(r.text), 'ak-prompt'),
              cell(typeof r.at === 'string' ? when(r.at, now) : '-', 'ak-time')
            );
            return tr;
          }),
          'messages'
        ),
        'messages'
      )
    );
  }

  const artifacts = list(state.artifacts);
  const count = typeof state.artifact_count === 'number' ? state.artifact_count : artifacts.length;
  const body = el('div');
  if (artifacts.length) {
    body.appendChild(
      table(
        ['Type', 'Made by', 'Created', 'Reference'],
        artifacts.map(r => {
          const tr = el('tr', 'agent-kernel-team-artifact');
          tr.dataset.key = text(r.ref);
          tr.append(
            cell(text(r.type)),
            cell(who(r.createdBy), '', text(r.createdBy)),
            cell(when(r.createdAt, now), 'ak-time'),
            cell(text(r.ref), 'ak-id')
          );
          return tr;
        }),
        'artifacts'
      )
    );
    if (count > artifacts.length) {
      body.appendChild(none(`and ${count - artifacts.length} older`));
    }
  } else {
    body.appendChild(none('None yet.'));
  }
  root.appendChild(folded('Artifacts', count, body, 'artifacts'));
  return root;
}

/** Draws the board; with a kernel to ask, each live row's Stop or Cancel in the row. */
export class BoardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(controls: KernelControls | null = null) {
    super();
    this._controls = controls;
    this.addClass('agent-kernel-lab-board');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[BOARD_MIME];
    if (!isRecord(data)) {
      const plain = model.data['text/plain'];
      this.node.replaceChildren(el('pre', 'akl-block', typeof plain === 'string' ? plain : ''));
      this._drawn = null;
      return;
    }
    this._record = data;
    this._draw();
  }

  private _live(): boolean {
    const record = this._record;
    const controls = this._controls;
    if (!record || !controls || record.controls !== 'extension' || !record.rows.length) {
      return false;
    }
    if (!controls.ready) {
      void controls.connect().then(found => {
        if (found) {
          this._draw();
        }
      });
      return false;
    }
    return true;
  }

  private _draw(): void {
    const record = this._record;
    if (!record) {
      return;
    }
    const live = this._live();
    const fresh = boardView(record, {
      button: row => (live ? this._button(row) : null),
      // no kernel to ask (a saved notebook reopened): the line that does it, no button
      note: row => `while its kernel runs: %agent_team ${row.op} ${row.id}`
    });
    if (this._drawn && this._drawn.isConnected) {
      patch(this._drawn, fresh);
    } else {
      this._drawn = fresh;
      this.node.replaceChildren(fresh);
    }
    // the same button nodes stay (patch keeps keyed nodes); a note under a refused click
    for (const [id, note] of this._notes) {
      const button = this._drawn.querySelector(`[data-row-id="${CSS.escape(id)}"]`);
      if (button) {
        button.setAttribute('title', note);
      }
    }
  }

  /** The row's button, keyed by row and op: patch.ts keeps the node drawn first, with
   * its listener, so it stays the same node (focus, hover, press) while the board updates. */
  private _button(row: IBoardRow): HTMLElement {
    const key = `${row.op}:${row.id}`;
    const label = row.op === 'stop' ? 'Stop' : 'Cancel';
    // Stop is red like a run's own Stop; Cancel is the quieter button of the triggers panel
    const look = row.op === 'stop' ? 'jp-mod-warn' : 'jp-mod-reject';
    const node = el('button', `jp-Button jp-mod-styled ${look} agent-kernel-team-${row.op}`, label);
    node.type = 'button';
    node.dataset.key = key;
    node.dataset.rowId = row.id;
    node.setAttribute('aria-label', `${label} ${row.label.replace(/^.*?: /, '')}`.trim());
    node.title = row.label;
    node.disabled = this._sending.has(row.id);
    node.addEventListener('click', () => this._click(row.id, row.op));
    return node;
  }

  private _click(id: string, op: string): void {
    const controls = this._controls;
    if (!controls || this._sending.has(id)) {
      return;
    }
    this._sending.add(id);
    this._notes.delete(id);
    this._draw();
    void controls.request({ action: 'team', op, id }).then(reply => {
      this._sending.delete(id);
      if (!reply.ok) {
        this._notes.set(id, reply.message);
      }
      this._draw();
    });
  }

  private _controls: KernelControls | null;
  private _record: IBoardRecord | null = null;
  private _drawn: HTMLElement | null = null;
  private _sending = new Set<string>();
  private _notes = new Map<string, string>();
}

/** The static factory (no kernel): the board with no button. */
export const boardFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [BOARD_MIME],
  defaultRank: 10,
  createRenderer: () => new BoardRenderer()
};
