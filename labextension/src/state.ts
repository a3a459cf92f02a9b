/**
 * The saved form of one agent-kernel run (schema version 1).
 *
 * The kernel writes it (`Transcript.state()` in agent_kernel/views/mime.py)
 * as the `application/vnd.agent-kernel.run.v1+json` part of a run's output;
 * this extension only reads it. `test/fixtures/run.json` holds every kind.
 *
 * The form's source is the kernel's pydantic models (agent_kernel/views/run_record.py),
 * from which `schema/run.v1.json` is generated; tests/views/test_run_schema.py fails
 * when an interface below differs from that schema (field names, their order, which are
 * optional, types and literal unions). Change the models, regenerate, then these.
 */

export const RUN_MIME = 'application/vnd.agent-kernel.run.v1+json';

export type RunStatus =
  | 'running'
  | 'done'
  | 'done_with_failures'
  | 'denied'
  | 'stopped'
  | 'failed'
  | 'limit';

export interface IUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ILoading {
  what: string;
  seconds: number | null;
}

export interface ITextEntry {
  kind: 'text';
  text: string;
}

export interface IQuestionEntry {
  kind: 'question';
  question_id: string;
  question: string;
  options: string[] | null;
  default: string | null;
  timeout: number;
  asked_at: string | null;
  approval: boolean;
  details: { [key: string]: unknown } | null;
  answer: string | null;
  source: 'user' | 'default' | 'timeout' | 'headless' | 'standing' | 'telegram' | 'email' | 'stopped' | null;
  answered_at: string | null;
  /** While the extension draws the controls: seconds left to answer. */
  seconds_left?: number | null;
}

export interface ILedgerLine {
  record_id: string;
  timestamp: string | null;
  hash: string | null;
}

export interface IToolEntry {
  kind: 'tool';
  call_id: string;
  tool: string;
  arguments: unknown;
  state: 'running' | 'waiting' | 'ok' | 'failed';
  summary: string;
  result: unknown;
  result_kind: 'text' | 'page' | 'json' | 'table' | 'error' | null;
  error: string | null;
  duration_ms: number | null;
  ledger: ILedgerLine | null;
  approval: IQuestionEntry | null;
}

export interface INoticeEntry {
  kind: 'notice';
  level: 'info' | 'warning' | 'error';
  text: string;
}

export interface IConsoleEntry {
  kind: 'console';
  text: string;
}

export interface IErrorEntry {
  kind: 'error';
  text: string;
}

/** A team agent's run (a Planner's, a Worker's) nested in the run that started its work. */
export interface IAgentEntry {
  kind: 'agent';
  agent_id: string;
  role: string;
  task_id: string;
  prompt: string;
  status: RunStatus;
  elapsed_ms: number | null;
  entries: Entry[];
}

export type Entry =
  | IAgentEntry
  | ITextEntry
  | IToolEntry
  | IQuestionEntry
  | INoticeEntry
  | IConsoleEntry
  | IErrorEntry;

export interface IRunState {
  version: number;
  run_id: string;
  prompt: string;
  model: string;
  offline: boolean;
  status: RunStatus;
  started_at: string | null;
  elapsed_ms: number | null;
  usage: IUsage | null;
  cost: number | null;
  loading: ILoading | null;
  entries: Entry[];
  /** `extension` while the run is live and this extension draws its controls. */
  controls?: 'extension' | null;
  /** A person stopped the run (Stop, `%agent_stop`): it reads "stopped by you". */
  stopped_by_person?: boolean | null;
  /** While the run waits for the run before it (the conversation is one at a time). */
  queued?: boolean | null;
}

/**
 * A waiting approval's exact arguments: NOT part of the saved form. The kernel hands
 * them only on the extension's comm (`exact`, agent_kernel/views/exact.py) while the
 * approval waits, so a saved notebook never holds them; the card shows them in full,
 * what looks like a secret marked, invisible characters as `U+202E` tokens.
 */
export interface IExactPart {
  text: string;
  mark: 'secret' | 'invisible' | null;
}

export interface IExactRow {
  /** The argument's name; null when the arguments are not a mapping. */
  name: string | null;
  /** More than one line: shown as a block. */
  block: boolean;
  parts: IExactPart[];
}

/** Where a card's exact arguments are: on their way, here, or refused (in words). */
export type ExactState = { rows: IExactRow[] } | { loading: true } | { error: string };

/** Whether `data` is a list of exact rows as the kernel sends them. */
export function isExactRows(data: unknown): data is IExactRow[] {
  return (
    Array.isArray(data) &&
    data.every(
      row =>
        typeof row === 'object' &&
        row !== null &&
        (row.name === null || typeof row.name === 'string') &&
        typeof row.block === 'boolean' &&
        Array.isArray(row.parts) &&
        row.parts.every(
          (part: unknown) =>
            typeof part === 'object' &&
            part !== null &&
            typeof (part as IExactPart).text === 'string' &&
            [null, 'secret', 'invisible'].includes((part as IExactPart).mark)
        )
    )
  );
}
