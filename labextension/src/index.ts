/**
 * agent-kernel's JupyterLab extension: a MIME renderer for runs.
 *
 * Each `%agent` run's output carries its state as
 * `application/vnd.agent-kernel.run.v1+json` beside `text/html` and
 * `text/plain`. This renderer ranks above `text/html`, so JupyterLab and
 * Notebook 7 draw the run from that JSON in the theme's colours, live or from
 * a saved file with no kernel. Saved or ended, questions and approvals read as
 * their outcome, never as a control. In a notebook whose kernel runs the run
 * (see plugin.ts), the same renderer also draws the live controls.
 */

import { renderMarkdown } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import type { KernelControls } from './controls';
import { holdingImages, showOnClick } from './images';
import { ILiveControls, runView } from './render';
import { panelControlsFactory } from './panel';
import { ExactState, IRunState, RUN_MIME, isExactRows } from './state';

/** The class of the renderer's node (the kernel's HTML fallback uses `agent-kernel-run`). */
export const CLASS_NAME = 'agent-kernel-lab-run';

/** Ahead of text/html (50) and Markdown (60); behind the widget view (-10) while live. */
export const RANK = 10;

const VERSION = 1;
const EXACT_RETRY_MS = 5000;

function isRunState(data: unknown): data is IRunState {
  if (typeof data !== 'object' || data === null) {
    return false;
  }
  const state = data as Partial<IRunState>;
  return state.version === VERSION && Array.isArray(state.entries) && !!state.status;
}

/** Draws one run from its saved JSON. */
export class RunRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions, controls: KernelControls | null = null) {
    super();
    this._options = options;
    this._controls = controls;
    this.addClass(CLASS_NAME);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[RUN_MIME];
    if (!isRunState(data)) {
      const text = model.data['text/plain'];
      this.node.replaceChildren(
        Object.assign(document.createElement('div'), {
          className: 'akl-quiet',
          textContent: 'This output holds an agent-kernel run in a form this version cannot read.'
        }),
        Object.assign(document.createElement('pre'), {
          className: 'akl-block',
          textContent: typeof text === 'string' ? text : ''
        })
      );
      return;
    }
    this._state = data;
    if (data.status !== 'running' || data.controls !== 'extension') {
      this._exact.clear(); // nothing waits any more: let the exact arguments go
    }
    await this._draw();
  }

  /** Draw the last state again (live: also after a click, keeping what the person typed). */
  private async _draw(): Promise<void> {
    const data = this._state;
    if (!data) {
      return;
    }
    const pending: Promise<void>[] = [];
    const markdown = (host: HTMLElement, source: string): Promise<void> => {
      const done = this._markdown(host, source);
      pending.push(done);
      return done;
    };
    const live = this._live(data);
    const focused = this.node.querySelector<HTMLInputElement>('input.akl-answer-input:focus');
    const opened = new Set(
      Array.from(this.node.querySelectorAll<HTMLDetailsElement>('details.akl-tool'))
        .filter(card => card.open !== (card.dataset.state === 'waiting'))
        .map(card => card.dataset.callId ?? '')
    );
    this.node.replaceChildren(runView(data, markdown, live));
    // A person's own unfolding of a card survives the once-a-second redraw.
    for (const card of Array.from(this.node.querySelectorAll<HTMLDetailsElement>('details.akl-tool'))) {
      if (opened.has(card.dataset.callId ?? '')) {
        card.open = !card.open;
      }
    }
    if (focused) {
      const again = this.node.querySelector<HTMLInputElement>(
        `input.akl-answer-input[data-question-id="${CSS.escape(focused.dataset.questionId ?? '')}"]`
      );
      again?.focus();
    }
    await Promise.all(pending);
  }

  /** The live controls for this run, when the kernel running it is ours to talk to. */
  private _live(data: IRunState): ILiveControls | null {
    const controls = this._controls;
    if (!controls || data.controls !== 'extension' || data.status !== 'running') {
      return null;
    }
    if (!controls.ready) {
      // Reloaded while the run lives: find the kernel's comm, then draw the controls.
      void controls.connect().then(found => {
        if (found) {
          void this._draw();
        }
      });
      return null;
    }
    const runId = data.run_id;
    const send = (key: string, request: () => Promise<{ ok: boolean; message: string }>) => {
      this._sending.add(key);
      this._notes.delete(key);
      void this._draw();
      void request().then(reply => {
        this._sending.delete(key);
        if (!reply.ok) {
          this._notes.set(key, reply.message);
        }
        void this._draw();
      });
    };
    return {
      connected: true,
      drafts: this._drafts,
      sending: this._sending,
      notes: this._notes,
      answer: (questionId, text) => send(questionId, () => controls.answer(runId, questionId, text)),
      stop: () => send('stop', () => controls.stop(runId)),
      exact: questionId => this._exactOf(controls, runId, questionId)
    };
  }

  /**
   * A waiting approval's exact arguments, asked of the kernel once (they live in this
   * renderer's memory only, never in the output's data, so a save cannot keep them).
   */
  private _exactOf(controls: KernelControls, runId: string, questionId: string): ExactState {
    const known = this._exact.get(questionId);
    if (known) {
      return known;
    }
    const loading: ExactState = { loading: true };
    this._exact.set(questionId, loading);
    void controls.exact(runId, questionId).then(reply => {
      const rows = reply.rows;
      if (reply.ok && isExactRows(rows)) {
        this._exact.set(questionId, { rows });
      } else {
        this._exact.set(questionId, {
          error: reply.ok ? 'the kernel sent something this version cannot read' : reply.message
        });
        // Ask again a little later (a busy kernel); the card says why meanwhile.
        window.setTimeout(() => {
          this._exact.delete(questionId);
          void this._draw();
        }, EXACT_RETRY_MS);
      }
      void this._draw();
    });
    return loading;
  }

  /** The answer's Markdown through JupyterLab's own renderer, always sanitized, with its
   * images held until the person clicks "show" (see images.ts). */
  private async _markdown(host: HTMLElement, source: string): Promise<void> {
    const options = this._options;
    const showAsText = () => {
      const pre = document.createElement('pre');
      pre.className = 'akl-block';
      pre.textContent = source;
      host.replaceChildren(pre);
    };
    if (!options.markdownParser) {
      showAsText();
      return;
    }
    try {
      await renderMarkdown({
        host,
        source,
        // Model text is never trusted: the sanitizer always runs, then images are held.
        trusted: false,
        sanitizer: holdingImages(options.sanitizer),
        resolver: options.resolver,
        linkHandler: options.linkHandler,
        latexTypesetter: options.latexTypesetter,
        markdownParser: options.markdownParser,
        shouldTypeset: this.isAttached,
        translator: options.translator
      });
      showOnClick(host, this._shownImages);
    } catch (reason) {
      console.warn('agent-kernel: could not render Markdown', reason);
      showAsText();
    }
  }

  private _options: IRenderMime.IRendererOptions;
  private _controls: KernelControls | null;
  private _state: IRunState | null = null;
  private _drafts = new Map<string, string>();
  private _sending = new Set<string>();
  private _notes = new Map<string, string>();
  private _exact = new Map<string, ExactState>();
  private _shownImages = new Set<string>();
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [RUN_MIME],
  defaultRank: RANK,
  createRenderer: options => new RunRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'agent-kernel:run-renderer',
  description: 'Draws agent-kernel runs from their saved JSON.',
  rendererFactory,
  rank: RANK,
  dataType: 'json'
};

const panelExtension: IRenderMime.IExtension = {
  id: 'agent-kernel:panel-controls-renderer',
  description: "Shows a saved triggers panel's controls as text.",
  rendererFactory: panelControlsFactory,
  rank: RANK,
  dataType: 'json'
};

export default [extension, panelExtension];
