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

import type { IReply, KernelControls } from './controls';
import { answerCodeTools } from './answer_code';
import { holdingImages, showOnClick } from './images';
import { boardFactory } from './board';
import { patch } from './patch';
import { ILiveControls, ILostRun, runView } from './render';
import { panelControlsFactory } from './panel';
import { ExactState, IRunState, RUN_MIME, isExactRows } from './state';
import { phase, statusWords } from './words';

/** The class of the renderer's node (the kernel's HTML fallback uses `agent-kernel-run`). */
export const CLASS_NAME = 'agent-kernel-lab-run';

/** Ahead of text/html (50) and Markdown (60); behind the widget view (-10) while live. */
export const RANK = 10;

const VERSION = 1;
const EXACT_RETRY_MS = 5000;
/** The kernel pushes a live run's state at least once a second: this long without one,
 * the page has lost the run's updates (a reload, a second tab) and asks for its state. */
const STALE_MS = 2500;
const POLL_MS = 1000;
const STOP_MAGIC = '%agent_stop';
/** How long the kernel may take to be found before the run says it cannot be reached. */
const BUSY_MS = 4000;
const BUSY =
  'The kernel is busy (a cell is running) and does not answer yet; ' +
  'the controls come back here when it is free.';
const UNREACHABLE =
  'This run may still be live in the kernel, but this page cannot reach it. ' +
  `To stop it, run \`${STOP_MAGIC}\` in a cell (or press Stop); ` +
  'its question keeps waiting until it is answered or its time runs out.';

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
    // Enter and Space on our buttons press them, and go no further (JupyterLab would
    // take Enter as "edit the cell"). Escape is left to JupyterLab: it leaves the output,
    // and answers nothing (an approval is a decision, never a side effect of leaving).
    this.node.addEventListener('keydown', event => {
      const target = event.target as HTMLElement | null;
      if (target?.tagName === 'BUTTON' && (event.key === 'Enter' || event.key === ' ')) {
        event.stopPropagation();
      }
    });
  }

  dispose(): void {
    this._watch(false);
    super.dispose();
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
    this._modelAt = Date.now();
    this._models++;
    this._model = model;
    this._lost = null;
    this._takeState(data);
    await this._draw();
  }

  /** A state from the output or from the kernel: what follows from it. */
  private _takeState(data: IRunState): void {
    const live = data.status === 'running' && data.controls === 'extension';
    if (data.status === 'running') {
      this._sawRunning = true;
    }
    if (!live) {
      this._exact.clear(); // nothing waits any more: let the exact arguments go
    }
    this._watch(live && !!this._controls);
  }

  /** While the run lives, notice when its updates stop reaching this page. */
  private _watch(on: boolean): void {
    if (on && this._timer === null) {
      this._timer = window.setInterval(() => void this._poll(), POLL_MS);
    } else if (!on && this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  /**
   * Updates stopped coming (a page reloaded, a second tab): ask the kernel for the
   * run's state over the probe comm and draw it with its controls; when the kernel
   * cannot be reached, say so and how to stop the run.
   */
  private async _poll(): Promise<void> {
    const controls = this._controls;
    const data = this._state;
    if (!controls || !data || this._polling || Date.now() - this._modelAt < STALE_MS) {
      return;
    }
    this._polling = true;
    try {
      // A kernel busy in a cell answers nothing until the cell ends: say so meanwhile
      // (and how to stop the run) instead of standing still; the ask goes on.
      const reached = await Promise.race([
        controls.connect(),
        new Promise<'busy'>(resolve => window.setTimeout(() => resolve('busy'), BUSY_MS))
      ]);
      if (reached === 'busy') {
        if (this._models <= 1 && !this._lost) {
          this._lost = {
            message: `${BUSY} ${UNREACHABLE}`,
            stop: controls.hasKernel ? () => controls.execute(STOP_MAGIC) : null
          };
          await this._draw();
        }
        return;
      }
      const reply = reached
        ? await controls.state(data.run_id)
        : { ok: false, message: '' };
      if (this._state !== data && Date.now() - this._modelAt < STALE_MS) {
        return; // the output's own update came meanwhile
      }
      if (reply.ok && isRunState(reply.state) && reply.state.run_id === data.run_id) {
        this._lost = null;
        this._state = reply.state;
        this._takeState(reply.state);
        if (reply.state.status !== 'running') {
          this._keepEnd(reply);
        }
      } else if (this._models > 1) {
        return; // updates did reach this page: the kernel is only busy (code running)
      } else {
        this._lost = {
          message: reply.ok || !reply.message ? UNREACHABLE : `${reply.message} ${UNREACHABLE}`,
          stop: controls.hasKernel ? () => controls.execute(STOP_MAGIC) : null
        };
      }
      await this._draw();
    } finally {
      this._polling = false;
    }
  }

  /** The run ended while only the kernel's replies reached this page: keep its final
   * form in the notebook, so a save holds the ended run, not a running one. */
  private _keepEnd(reply: IReply): void {
    const bundle = reply.bundle;
    const model = this._model;
    if (!model || typeof bundle !== 'object' || bundle === null) {
      return;
    }
    const data: { [mime: string]: string | object } = {};
    for (const [mime, value] of Object.entries(bundle as { [mime: string]: unknown })) {
      if (typeof value === 'string' || (typeof value === 'object' && value !== null)) {
        data[mime] = value as string | object;
      }
    }
    if (isRunState(data[RUN_MIME])) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      model.setData({ data: data as any });
    }
  }

  /** What the run's polite live region says: only what a person waits to hear. */
  private _announce(data: IRunState): string {
    if (data.status === 'running') {
      const now = phase(data);
      return now.startsWith('waiting for your') ? now : '';
    }
    return this._sawRunning ? statusWords(data) : '';
  }

  /** Draw the last state again (live: also after a click, keeping what the person typed). */
  private async _draw(): Promise<void> {
    const data = this._state;
    if (!data) {
      return;
    }
    const pending: Promise<void>[] = [];
    const old = this.node.firstElementChild as HTMLElement | null;
    const patching = !!old && this.node.childElementCount === 1 && old.dataset.runId === data.run_id;
    const drawn = new Set(
      patching
        ? Array.from(old!.querySelectorAll<HTMLElement>('[data-opaque]')).map(n => n.dataset.key)
        : []
    );
    const markdown = (host: HTMLElement, source: string): Promise<void> => {
      if (drawn.has(host.dataset.key)) {
        return Promise.resolve(); // drawn already: the patch keeps the page's copy
      }
      const done = this._markdown(host, source);
      pending.push(done);
      return done;
    };
    const live = this._lost ? null : this._live(data);
    const fresh = runView(data, markdown, live, this._announce(data), this._lost);
    // The same run drawn already: patch it in place (patch.ts), so buttons, focus,
    // selections and unfolded cards survive every update; else draw it anew.
    if (patching) {
      patch(old!, fresh);
    } else {
      this.node.replaceChildren(fresh);
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
      const controls = this._controls;
      const runId = this._state?.run_id;
      const insert = controls?.insertCell;
      answerCodeTools(host, insert && runId ? source => insert(runId, source) : null);
    } catch (reason) {
      console.warn('agent-kernel: could not render Markdown', reason);
      showAsText();
    }
  }

  private _modelAt = 0;
  private _models = 0;
  private _model: IRenderMime.IMimeModel | null = null;
  private _timer: number | null = null;
  private _polling = false;
  private _lost: ILostRun | null = null;
  private _sawRunning = false;
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

const boardExtension: IRenderMime.IExtension = {
  id: 'agent-kernel:team-board-renderer',
  description: 'Draws a saved team board from its JSON, with no button.',
  rendererFactory: boardFactory,
  rank: RANK,
  dataType: 'json'
};

export default [extension, panelExtension, boardExtension];
