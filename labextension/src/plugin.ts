/**
 * The live half of the extension: per notebook, a run renderer that can talk
 * to the notebook's kernel (controls.ts), so a live run's approvals, questions
 * and Stop are drawn inside the run output itself; likewise a triggers panel's
 * Approve and Cancel (panel.ts), and the team board's Stop and Cancel in its rows
 * (board.ts).
 *
 * Registered as a document widget extension, as ipywidgets does: it runs when a
 * notebook panel is made, before its outputs are drawn, and replaces the run
 * renderer in that notebook's own MIME registry. The app, panel and registry
 * are typed by the few members used here, so the extension needs no more of
 * JupyterLab than rendermime, apputils and services at build time.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { BOARD_MIME, BoardRenderer } from './board';
import { INotebookLike, NotebookCells } from './cells';
import { KernelControls } from './controls';
import { RANK, RunRenderer } from './index';
import { CONTROLS_MIME, PanelControlsRenderer } from './panel';
import { RUN_MIME } from './state';

interface IDisposableLike {
  dispose(): void;
  readonly isDisposed: boolean;
}

interface INotebookPanelLike {
  readonly content: INotebookLike & { readonly rendermime: IRenderMimeRegistry };
  readonly sessionContext: ISessionContext;
  readonly disposed: { connect(slot: () => void): boolean };
}

interface IAppLike {
  readonly docRegistry: {
    addWidgetExtension(
      widgetName: string,
      extension: { createNew(panel: INotebookPanelLike, context: unknown): IDisposableLike | void }
    ): IDisposableLike;
  };
}

/** For one notebook panel: the live run renderer, until the panel goes. */
export function attachControls(panel: INotebookPanelLike): KernelControls {
  const controls = new KernelControls(panel.sessionContext);
  const factory: IRenderMime.IRendererFactory = {
    safe: true,
    mimeTypes: [RUN_MIME],
    defaultRank: RANK,
    createRenderer: options => new RunRenderer(options, controls)
  };
  panel.content.rendermime.addFactory(factory, RANK);
  panel.content.rendermime.addFactory(
    {
      safe: true,
      mimeTypes: [CONTROLS_MIME],
      defaultRank: RANK,
      createRenderer: () => new PanelControlsRenderer(controls)
    },
    RANK
  );
  panel.content.rendermime.addFactory(
    {
      safe: true,
      mimeTypes: [BOARD_MIME],
      defaultRank: RANK,
      createRenderer: () => new BoardRenderer(controls)
    },
    RANK
  );
  const cells = new NotebookCells(panel.content, panel.sessionContext);
  controls.onKernelRequest = request => cells.handle(request);
  controls.insertCell = (runId, source) => cells.insertBelowRun(runId, source);
  // Find the kernel's comm now, not only when a run is drawn: after a page reload the
  // agent may ask for cells before any run output of this page asks for controls.
  void panel.sessionContext.ready.then(() => controls.connect());
  panel.disposed.connect(() => controls.dispose());
  return controls;
}

const plugin = {
  id: 'agent-kernel:live-controls',
  description: 'Draws the live controls of agent-kernel runs inside their output.',
  autoStart: true,
  activate: (app: IAppLike): void => {
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: panel => {
        attachControls(panel);
      }
    });
  }
};

export default plugin;
