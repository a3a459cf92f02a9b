/**
 * A triggers panel's live controls (Approve, Cancel), drawn from
 * `application/vnd.agent-kernel.controls.v1+json`.
 *
 * The kernel sends this bundle only while a trigger of the panel is live and our
 * extension said hello; once none is, the output becomes plain text. Saved while
 * live and reopened, the rows read as text with the `%agent_triggers` line that
 * does the same, never as dead buttons: the buttons appear only in a notebook
 * whose kernel can be asked (controls.ts).
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

interface IControlsState {
  version: number;
  kind: string;
  rows: IRow[];
  outcomes: string[];
}

function isControls(data: unknown): data is IControlsState {
  const state = data as Partial<IControlsState> | null;
  return (
    !!state &&
    state.version === 1 &&
    state.kind === 'triggers' &&
    Array.isArray(state.rows) &&
    Array.isArray(state.outcomes)
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
    for (const row of state.rows) {
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

  private _button(label: string, classes: string, id: string, op: string): HTMLButtonElement {
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
      void controls.request({ action: 'trigger', op, trigger_id: id }).then(reply => {
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
