/**
 * The channel to a notebook's kernel for live controls.
 *
 * `%load_ext agent_kernel` opens a comm to `agent_kernel.frontend_probe`.
 * We register that target on the notebook's kernel and answer `hello`: the
 * kernel then lets this extension draw the controls of its runs (no ipywidgets)
 * and takes the person's answers and Stop on that comm. After a page reload
 * the comm is found again through `comm_info` (the kernel keeps it open).
 * A waiting approval's exact arguments come only on this comm (`exact`), never
 * in an output, so nothing saved holds them.
 * See agent_kernel/views/frontend.py for the kernel's side.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

export const PROBE_TARGET = 'agent_kernel.frontend_probe';
const REPLY_TIMEOUT_MS = 10000;
const MISS_MEMORY_MS = 5000;

/** What the kernel said of one request: done, or why not (in words for people). */
export interface IReply {
  ok: boolean;
  message: string;
  /** The reply to `exact`: the approval's arguments as marked rows (checked by the caller). */
  rows?: unknown;
  /** The reply to `state`: the run's current state (checked by the caller). */
  state?: unknown;
  /** With `state`: the run's whole MIME bundle (kept in the notebook once it ended). */
  bundle?: unknown;
}

export class KernelControls {
  constructor(sessionContext: ISessionContext) {
    this._session = sessionContext;
    sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    this._watch(sessionContext.session?.kernel ?? null);
  }

  /** This page's name on the comm, in its hello (one per notebook panel). */
  readonly pageId = `p${Math.random().toString(36).slice(2, 12)}`;

  /** Whether the kernel's probe comm is known: only then can anything be answered. */
  get ready(): boolean {
    return !!this._comm;
  }

  /**
   * Look for the kernel's probe comm (after a page reload, or a kernel that never
   * loaded agent_kernel): true once controls can be used. A miss is remembered for
   * a few seconds, so a renderer redrawn every second does not ask each time.
   */
  async connect(): Promise<boolean> {
    if (this._comm) {
      return true;
    }
    if (Date.now() - this._missedAt < MISS_MEMORY_MS) {
      return false;
    }
    let comm: Kernel.IComm | null = null;
    try {
      comm = await this._find();
    } catch (reason) {
      console.warn('agent-kernel: could not look for the kernel\'s comm', reason);
    }
    if (!comm) {
      this._missedAt = Date.now();
    }
    return !!comm;
  }

  /** Hand an answer to a run's waiting question. */
  answer(runId: string, questionId: string, answer: string): Promise<IReply> {
    return this._request({ action: 'answer', run_id: runId, question_id: questionId, answer });
  }

  /** A waiting approval's exact arguments (the reply's `rows`). */
  exact(runId: string, questionId: string): Promise<IReply> {
    return this._request({ action: 'exact', run_id: runId, question_id: questionId });
  }

  /** A live run's current state: a page reloaded while it runs draws it from this. */
  state(runId: string): Promise<IReply> {
    return this._request({ action: 'state', run_id: runId });
  }

  /** Whether there is a kernel to send a magic to. */
  get hasKernel(): boolean {
    return !!this._kernel && !this._kernel.isDisposed;
  }

  /** Run `code` (a magic such as `%agent_stop`) in the kernel, as a cell would. */
  execute(code: string): void {
    const kernel = this._kernel;
    if (kernel && !kernel.isDisposed) {
      kernel.requestExecute({ code, silent: false, store_history: false });
    }
  }

  /** Stop a run. */
  stop(runId: string): Promise<IReply> {
    return this._request({ action: 'stop', run_id: runId });
  }

  /**
   * Who carries out the kernel's own requests (`{cells: op, request_id}`: cells.ts);
   * its answer goes back as `{action: "cells_reply", reply_to}`.
   */
  /** Put a code cell holding `source` below the run's cell (the person's click; cells.ts). */
  insertCell: ((runId: string, source: string) => boolean) | null = null;

  onKernelRequest: ((request: { [key: string]: unknown }) => Promise<{ [key: string]: unknown }>) | null =
    null;

  dispose(): void {
    this._session.kernelChanged.disconnect(this._onKernelChanged, this);
    this._forget();
  }

  private _onKernelChanged(
    _sender: ISessionContext,
    change: { newValue: Kernel.IKernelConnection | null }
  ): void {
    this._forget();
    this._watch(change.newValue);
  }

  private _watch(kernel: Kernel.IKernelConnection | null): void {
    if (!kernel) {
      return;
    }
    this._kernel = kernel;
    kernel.registerCommTarget(PROBE_TARGET, this._onOpen);
  }

  private _forget(): void {
    if (this._kernel && !this._kernel.isDisposed) {
      this._kernel.removeCommTarget(PROBE_TARGET, this._onOpen);
    }
    this._kernel = null;
    this._comm = null;
    this._finding = null;
    this._missedAt = 0;
  }

  /** The kernel opened the probe (at `%load_ext`): keep it and say hello. */
  private _onOpen = (comm: Kernel.IComm): void => {
    this._adopt(comm);
  };

  private _adopt(comm: Kernel.IComm): void {
    this._comm = comm;
    comm.onMsg = msg => this._onReply(msg);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
      }
    };
    // `page`: the kernel addresses its own requests (cells.ts) to the page that said hello
    // last, so a notebook open in two browser tabs is not changed twice.
    comm.send({ action: 'hello', protocol: 1, page: this.pageId });
  }

  /** The kernel's probe comm, found again after a page reload. */
  private async _find(): Promise<Kernel.IComm | null> {
    const kernel = this._kernel;
    if (this._comm || !kernel) {
      return this._comm;
    }
    if (!this._finding) {
      this._finding = (async () => {
        const reply = await kernel.requestCommInfo({ target_name: PROBE_TARGET });
        const content = reply.content;
        if (content.status !== 'ok') {
          return null;
        }
        const ids = Object.keys(content.comms);
        if (!ids.length || this._kernel !== kernel) {
          return null;
        }
        const id = ids[ids.length - 1];
        if (kernel.hasComm(id)) {
          return this._comm;
        }
        this._adopt(kernel.createComm(PROBE_TARGET, id));
        return this._comm;
      })().finally(() => {
        this._finding = null;
      });
    }
    return this._finding;
  }

  /** Send one request of the extension's protocol; resolves with the kernel's reply. */
  request(data: { [key: string]: string }): Promise<IReply> {
    return this._request(data);
  }

  private async _request(data: { [key: string]: string }): Promise<IReply> {
    let comm: Kernel.IComm | null;
    try {
      comm = await this._find();
    } catch (reason) {
      console.warn('agent-kernel: could not reach the kernel', reason);
      comm = null;
    }
    if (!comm) {
      return { ok: false, message: 'The kernel that ran this is not connected.' };
    }
    const id = `r${++this._counter}`;
    return new Promise<IReply>(resolve => {
      const timer = window.setTimeout(() => {
        this._waiting.delete(id);
        resolve({ ok: false, message: 'The kernel did not reply (is it busy?).' });
      }, REPLY_TIMEOUT_MS);
      this._waiting.set(id, reply => {
        window.clearTimeout(timer);
        resolve(reply);
      });
      comm!.send({ ...data, request_id: id });
    });
  }

  private _onReply(msg: KernelMessage.ICommMsgMsg): void {
    const asked = msg.content.data as { [key: string]: unknown };
    if (typeof asked.cells === 'string') {
      if (asked.page === undefined || asked.page === this.pageId) {
        void this._answerKernel(asked);
      }
      return;
    }
    const data = msg.content.data as {
      request_id?: unknown;
      ok?: unknown;
      message?: unknown;
      rows?: unknown;
      state?: unknown;
      bundle?: unknown;
    };
    const id = typeof data.request_id === 'string' ? data.request_id : '';
    const done = this._waiting.get(id);
    if (done) {
      this._waiting.delete(id);
      done({
        ok: data.ok === true,
        message: typeof data.message === 'string' ? data.message : '',
        rows: data.rows,
        state: data.state,
        bundle: data.bundle
      });
    }
  }

  private async _answerKernel(request: { [key: string]: unknown }): Promise<void> {
    const handler = this.onKernelRequest;
    const reply = handler
      ? await handler(request)
      : { ok: false, message: 'This notebook cannot answer cell requests.' };
    const comm = this._comm;
    if (comm && !comm.isDisposed) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      comm.send({ ...reply, action: 'cells_reply', reply_to: String(request.request_id ?? '') } as any);
    }
  }

  private _session: ISessionContext;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _finding: Promise<Kernel.IComm | null> | null = null;
  private _counter = 0;
  private _missedAt = 0;
  private _waiting = new Map<string, (reply: IReply) => void>();
}
