/**
 * agent-kernel's JupyterLab extension: a MIME renderer for runs.
 *
 * Each `%agent` run's output carries its state as
 * `application/vnd.agent-kernel.run.v1+json` beside `text/html` and
 * `text/plain`. This renderer ranks above `text/html`, so JupyterLab and
 * Notebook 7 draw the run from that JSON in the theme's colours, live or from
 * a saved file with no kernel. It only shows state: questions and approvals
 * read as their outcome, never as a control.
 */

import { renderMarkdown } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { runView } from './render';
import { IRunState, RUN_MIME } from './state';

/** The class of the renderer's node (the kernel's HTML fallback uses `agent-kernel-run`). */
export const CLASS_NAME = 'agent-kernel-lab-run';

/** Ahead of text/html (50) and Markdown (60); behind the widget view (-10) while live. */
export const RANK = 10;

const VERSION = 1;

function isRunState(data: unknown): data is IRunState {
  if (typeof data !== 'object' || data === null) {
    return false;
  }
  const state = data as Partial<IRunState>;
  return state.version === VERSION && Array.isArray(state.entries) && !!state.status;
}

/** Draws one run from its saved JSON. */
export class RunRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._options = options;
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
    const pending: Promise<void>[] = [];
    const markdown = (host: HTMLElement, source: string): Promise<void> => {
      const done = this._markdown(host, source);
      pending.push(done);
      return done;
    };
    this.node.replaceChildren(runView(data, markdown));
    await Promise.all(pending);
  }

  /** The answer's Markdown through JupyterLab's own renderer, always sanitized. */
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
        // Model text is never trusted: the sanitizer always runs.
        trusted: false,
        sanitizer: options.sanitizer,
        resolver: options.resolver,
        linkHandler: options.linkHandler,
        latexTypesetter: options.latexTypesetter,
        markdownParser: options.markdownParser,
        shouldTypeset: this.isAttached,
        translator: options.translator
      });
    } catch (reason) {
      console.warn('agent-kernel: could not render Markdown', reason);
      showAsText();
    }
  }

  private _options: IRenderMime.IRendererOptions;
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

export default extension;
