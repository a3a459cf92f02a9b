/**
 * Live controls drawn from `application/vnd.agent-kernel.controls.v1+json`:
 * a triggers panel's (`kind: "triggers"`: Approve, Cancel) and the team
 * board's (`kind: "team"`: Cancel for a queued task or a trigger, Stop for a
 * running task).
 *
 * The kernel sends this bundle only while a row is live and our extension said
 * hello; once none is, the output becomes plain text. Saved while live and
 * reopened, the rows read as text with the `%agent_triggers` / `%agent_team`
 * line that does the same, never as dead buttons: the buttons appear only in a
 * notebook whose kernel can be asked (controls.ts).
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import type { KernelControls } from './controls';

export const CONTROLS_MIME = 'application/vnd.agent-kernel.controls.v1+json';

interface IRow {
  trigger_id: string;
  label: string;
  needs_approval: boolean;
}

/** A team board row: a task or trigger id, and what its one button does. */
interface ITeamRow {
  id: string;
  label: string;
  op: 'cancel' | 'stop';
  button: string;
}

interface IControlsState {
  version: number;
  kind: 'triggers' | 'team';
  rows: (IRow | ITeamRow)[];
  outcomes: string[];
}

function isControls(data: unknown): data is IControlsState {
  const state = data as Partial<IControlsState> | null;
  return (
    !!state &&
    state.version === 1 &&
    (state.kind === 'triggers' || state.kind === 'team') &&
    Array.isArray(state.rows) &&
    Array.isArray(state.outcomes)
  );
}

function isTeamRow(row: unknown): row is ITeamRow {
  const r = row as Partial<ITeamRow> | null;
  return (
    !!r &&
    typeof r.id === 'string' &&
    typeof r.label === 'string' &&
    (r.op === 'cancel' || r.op === 'stop')
  );
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Draws a triggers panel's controls; live only with a kernel to ask. */
export class PanelControlsRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(controls: KernelControls | null = null) {
    super();
    this._controls = controls;
    this.addClass('agent-kernel-lab-run');
    this.addClass('akl-panel-controls');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[CONTROLS_MIME];
    if (!isControls(data)) {
      const text = model.data['text/plain'];
      this.node.replaceChildren(el('pre', 'akl-block', typeof text === 'string' ? text : ''));
      return;
    }
    this._state = data;
    this._draw();
  }

  private _draw(): void {
    const state = this._state;
    if (!state) {
      return;
    }
    const box = el('div', 'akl-controls');
    for (const line of state.outcomes) {
      box.appendChild(el('div', 'akl-quiet agent-kernel-outcome', line));
    }
    const controls = this._controls;
    const live = !!controls && controls.ready;
    if (controls && !live && state.rows.length) {
      void controls.connect().then(found => {
        if (found) {
          this._draw();
        }
      });
    }
    if (state.kind === 'team') {
      this._drawTeam(box, state, live);
      this.node.replaceChildren(box);
      return;
    }
    for (const raw of state.rows) {
      const row = raw as IRow;
      const line = el('div', 'akl-buttons akl-trigger-row');
      const id = row.trigger_id;
      if (live) {
        if (row.needs_approval) {
          line.appendChild(this._button('Approve', 'jp-mod-accept agent-kernel-trigger-approve', id, 'approve'));
        }
        line.appendChild(this._button('Cancel', 'jp-mod-reject agent-kernel-trigger-cancel', id, 'cancel'));
      }
      line.appendChild(el('code', 'akl-code', id));
      line.appendChild(el('span', '', row.label));
      if (!live) {
        line.appendChild(
          el('span', 'akl-quiet', `(to cancel while its kernel runs: %agent_triggers cancel ${id})`)
        );
      }
      box.appendChild(line);
      const note = this._notes.get(id);
      if (note) {
        box.appendChild(el('div', 'akl-note', note));
      }
    }
    this.node.replaceChildren(box);
  }

  /** The team board's rows: one Cancel or Stop each. */
  private _drawTeam(box: HTMLElement, state: IControlsState, live: boolean): void {
    for (const row of state.rows) {
      if (!isTeamRow(row)) {
        continue;
      }
      const line = el('div', 'akl-buttons akl-team-row');
      if (live) {
        const label = row.op === 'stop' ? 'Stop' : 'Cancel';
        // Stop is red like a run's own Stop; Cancel is the quieter button of the triggers panel
        const look = row.op === 'stop' ? 'jp-mod-warn' : 'jp-mod-reject';
        line.appendChild(
          this._button(label, `${look} agent-kernel-team-${row.op}`, row.id, row.op, 'team')
        );
      }
      // the words lead; the task's id is a tooltip (the saved text still names it, to type)
      line.title = row.id;
      line.appendChild(el('span', '', row.label));
      if (!live) {
        line.appendChild(
          el('span', 'akl-quiet', `(while its kernel runs: %agent_team ${row.op} ${row.id})`)
        );
      }
      box.appendChild(line);
      const note = this._notes.get(row.id);
      if (note) {
        box.appendChild(el('div', 'akl-note', note));
      }
    }
  }

  private _button(
    label: string,
    classes: string,
    id: string,
    op: string,
    action: 'trigger' | 'team' = 'trigger'
  ): HTMLButtonElement {
    const node = el('button', `jp-Button jp-mod-styled ${classes}`, label);
    node.type = 'button';
    node.disabled = this._sending.has(id);
    node.addEventListener('click', () => {
      const controls = this._controls;
      if (!controls) {
        return;
      }
      this._sending.add(id);
      this._notes.delete(id);
      this._draw();
      const request: { [key: string]: string } =
        action === 'team' ? { action, op, id } : { action, op, trigger_id: id };
      void controls.request(request).then(reply => {
        this._sending.delete(id);
        if (!reply.ok) {
          this._notes.set(id, reply.message);
        }
        this._draw();
      });
    });
    return node;
  }

  private _controls: KernelControls | null;
  private _state: IControlsState | null = null;
  private _sending = new Set<string>();
  private _notes = new Map<string, string>();
}

/** The static factory (no kernel): rows as text. */
export const panelControlsFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [CONTROLS_MIME],
  defaultRank: 10,
  createRenderer: () => new PanelControlsRenderer()
};
