/**
 * The words a person reads: status, times, outcomes of questions and approvals.
 *
 * They match the kernel's HTML fallback (agent_kernel/views/run_html.py), so
 * a run reads the same with and without this extension. STATUS_TEXT is the kernel's
 * RUN_STATUS_WORDS (agent_kernel/core/statuses.py), and the approval answers are
 * views/mime.py's: tests/views/test_run_schema.py compares them.
 */

import { Entry, IQuestionEntry, IRunState, RunStatus } from './state';

export const STATUS_TEXT: { [status in RunStatus]: string } = {
  running: 'running',
  done: 'done',
  done_with_failures: 'done with failures',
  denied: 'denied',
  stopped: 'stopped',
  failed: 'failed',
  limit: 'stopped at the limit'
};

export const APPROVE = 'Approve';
export const DENY = 'Deny';
export const ALWAYS = 'Always allow this tool';

/** `12:04:31` in local time from an ISO stamp; `''` when there is none. */
export function clock(stamp: string | null | undefined): string {
  if (!stamp) {
    return '';
  }
  const moment = new Date(stamp);
  if (isNaN(moment.getTime())) {
    return '';
  }
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(moment.getHours())}:${two(moment.getMinutes())}:${two(moment.getSeconds())}`;
}

/** `2026-11-23 17:19 CET`: a memory's local date and time with its zone; else as given. */
export function localDate(stamp: string): string {
  const moment = new Date(stamp);
  if (isNaN(moment.getTime())) {
    return stamp;
  }
  const two = (n: number) => String(n).padStart(2, '0');
  const zone =
    new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' })
      .formatToParts(moment)
      .find(part => part.type === 'timeZoneName')?.value ?? '';
  const day = `${moment.getFullYear()}-${two(moment.getMonth() + 1)}-${two(moment.getDate())}`;
  return `${day} ${two(moment.getHours())}:${two(moment.getMinutes())} ${zone}`.trim();
}

/** `3.2 s` or `2 min 5 s`. */
export function seconds(ms: number): string {
  if (ms < 60_000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  return `${Math.floor(ms / 60_000)} min ${Math.floor((ms % 60_000) / 1000)} s`;
}

/** `offline demo model`, or the model with usage and cost when they are known. */
export function modelWords(state: IRunState): string {
  if (state.offline) {
    return 'offline demo model';
  }
  const parts = [state.model];
  const usage = state.usage;
  if (usage) {
    parts.push(
      `${usage.total_tokens} tokens (${usage.prompt_tokens} in, ${usage.completion_tokens} out)`
    );
  }
  if (state.cost) {
    parts.push(`$${state.cost.toFixed(4)}`);
  }
  return parts.join(' · ');
}

/** How long the run has been going, in whole seconds (for a running run). */
function runningSeconds(state: IRunState): number {
  if (state.elapsed_ms !== null && state.elapsed_ms !== undefined) {
    return Math.round(state.elapsed_ms / 1000);
  }
  const started = state.started_at ? new Date(state.started_at).getTime() : NaN;
  return isNaN(started) ? 0 : Math.max(0, Math.round((Date.now() - started) / 1000));
}

/** What a running run is doing, from its entries. */
export function phase(state: IRunState): string {
  if (state.queued) {
    return 'waiting for the run above to finish';
  }
  const loading = state.loading;
  if (loading && (loading.seconds === null || loading.seconds === undefined)) {
    return `loading ${loading.what}… ${runningSeconds(state)} s`;
  }
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const entry = state.entries[i];
    if (entry.kind === 'question' && entry.source === null) {
      return entry.approval ? 'waiting for your approval' : 'waiting for your answer';
    }
    if (entry.kind === 'tool' && entry.state === 'waiting') {
      return entry.approval && !entry.approval.approval
        ? 'waiting for your answer'
        : 'waiting for your approval';
    }
    if (entry.kind === 'tool' && entry.state === 'running') {
      return `running ${entry.tool}`;
    }
  }
  return 'working';
}

/** The header's status words: `done`, `done with failures`, `running · loading …`. */
export function statusWords(state: IRunState): string {
  if (state.status === 'stopped' && state.stopped_by_person) {
    return 'stopped by you';
  }
  const words = STATUS_TEXT[state.status] ?? String(state.status);
  return state.status === 'running' ? `${words} · ${phase(state)}` : words;
}

/** Whether an approval's answer let the call run. */
export function approved(question: IQuestionEntry): boolean {
  return (
    question.answer === APPROVE || question.answer === ALWAYS || question.source === 'standing'
  );
}

/** Where an answer given away from the notebook came from (agent_kernel/views/run_html.py). */
const FROM_PHONE: Record<string, string> = { telegram: ' on Telegram', email: ' by e-mail' };

/** How a question or approval reads when its run ended while it waited. */
export const STOPPED_OUTCOME = 'Not answered: the run was stopped';
/** The card's line of a call whose approval the run's end left unanswered. */
export const STOPPED_APPROVAL_CARD = 'not run: the run was stopped before you answered';
/** The card's line of a call whose question the run's end left unanswered. */
export const STOPPED_QUESTION_CARD = 'not answered: the run was stopped';

/**
 * The run as a person reads it once it has ended (views/run_record.py's `ended_waits`):
 * a question or approval still waiting is `stopped` and the card it gated did not run,
 * so a saved notebook never reads "waiting for your approval" with nobody to ask. A run
 * saved before `stopped` existed (its waits `source: null`) reads the same.
 */
export function endedWaits(state: IRunState): IRunState {
  const entries = state.entries ?? [];
  const ended = state.status !== 'running';
  if (!ended && !anyEnded(entries)) {
    return state;
  }
  return { ...state, entries: endedEntries(entries, ended, ended) };
}

function anyEnded(entries: Entry[]): boolean {
  return entries.some(
    e => e.kind === 'agent' && (e.status !== 'running' || anyEnded(e.entries ?? []))
  );
}

function stopped(question: IQuestionEntry): IQuestionEntry {
  const ended: IQuestionEntry = { ...question, source: 'stopped' };
  delete ended.seconds_left;
  return ended;
}

/**
 * The entries of a run that has `ended`, inside a whole run that is `over`: a nested
 * run's waits end with it or with the whole run, never with the run it sits in (a
 * Worker still asking sits inside its Planner's finished run).
 */
function endedEntries(entries: Entry[], ended: boolean, over: boolean): Entry[] {
  return entries.map(entry => {
    if (entry.kind === 'agent') {
      return {
        ...entry,
        entries: endedEntries(entry.entries ?? [], over || entry.status !== 'running', over)
      };
    }
    const waits = (q: IQuestionEntry | null | undefined) =>
      !!q && (q.source === null || q.source === undefined);
    if (ended && entry.kind === 'question' && waits(entry)) {
      return stopped(entry);
    }
    if (ended && entry.kind === 'tool' && entry.approval && waits(entry.approval)) {
      const approval = stopped(entry.approval);
      if (entry.state !== 'waiting' && entry.state !== 'running') {
        return { ...entry, approval };
      }
      // it never ran, nor will
      const words = entry.approval.approval ? STOPPED_APPROVAL_CARD : STOPPED_QUESTION_CARD;
      return { ...entry, approval, state: 'failed', summary: words, error: words };
    }
    return entry;
  });
}

/** The id of the team agent that asks (`worker-3`): for a tooltip, never the words. */
export function askerId(question: IQuestionEntry): string | null {
  const agent = question.details?.['asked_by'];
  return typeof agent === 'string' && agent ? agent : null;
}

/**
 * A question's label: `Approval`, `Question`, or the team agent that asks, named by its
 * work as its nested run is (`run command sleep 30 · Worker asks`; views/summaries.py's
 * `question_label`); the role alone when its work is not known.
 */
export function questionLabel(question: IQuestionEntry): string {
  if (askerId(question) === null) {
    return question.approval ? 'Approval' : 'Question';
  }
  const details = question.details ?? {};
  const work = details['asked_by_work'];
  const role = details['asked_by_role'];
  const who = workName(
    typeof work === 'string' ? work : '',
    typeof role === 'string' && role ? role : 'agent'
  );
  return `${who} asks`;
}

/** How a question or approval ended (`You chose staging · 12:04:31`). */
export function outcome(question: IQuestionEntry, running: boolean): string {
  const { answer, source } = question;
  if (source === 'stopped' || ((source === null || source === undefined) && !running)) {
    return STOPPED_OUTCOME;
  }
  if (source === null || source === undefined) {
    return question.approval ? 'Waiting for your approval' : 'Waiting for your answer';
  }
  let text: string;
  if (question.approval) {
    if (source === 'headless') {
      text = approved(question)
        ? 'Allowed by the headless policy'
        : 'Not run: no one could approve it';
    } else if (source === 'standing') {
      text = 'Allowed by your standing permission';
    } else if (source === 'user' || source === 'telegram' || source === 'email') {
      text =
        answer === APPROVE
          ? 'Approved'
          : answer === DENY
            ? 'Denied'
            : answer === ALWAYS
              ? 'Always allowed for this session'
              : `Answered ${answer}`;
      text += FROM_PHONE[source] ?? '';
    } else {
      text = 'No answer in time: not run';
    }
  } else if (source === 'user' || source === 'telegram' || source === 'email') {
    text = question.options ? `You chose ${answer}` : `You answered “${answer}”`;
    text += FROM_PHONE[source] ?? '';
  } else if (source === 'timeout') {
    text = 'No answer in time';
  } else if (source === 'headless') {
    text = answer ? `No one to ask (headless run): went on with ${answer}` : 'No one to ask';
  } else {
    text = `No answer: used the default, ${answer}`;
  }
  const at = clock(question.answered_at);
  return at && source !== 'headless' ? `${text} · ${at}` : text;
}

/** The words of a live approval's exact arguments (they match agent_kernel/views/exact.py). */
export const EXACT_TITLE = 'It will run with exactly:';
export const EXACT_LOADING = 'Getting exactly what will run from the kernel…';
export const SECRET_NOTE =
  'looks like a secret: shown so you see exactly what runs; the saved record masks it';
export const INVISIBLE_NOTE = 'a character that draws nothing or changes how the text around it reads';
export const SECRET_LEGEND = 'looks like a secret (shown in full; the saved record masks it)';
export const INVISIBLE_LEGEND =
  'a character that draws nothing or reorders text, or a word that mixes alphabets (look-alike letters)';

/** Why Approve is off while the exact arguments are not shown. */
export function exactProblem(message: string): string {
  return `Cannot show exactly what will run (${message}), so Approve is off; you can still deny.`;
}

/** How many words of its task name a team agent (views/summaries.py's WORK_WORDS). */
const WORK_WORDS = 4;

/**
 * A team agent named by its work, as a person would: `research Lisbon for a… · Worker`
 * (its id, `worker-6`, is a tooltip); the role alone when it works on nothing. The same
 * words as views/summaries.py's `work_name`.
 */
export function workName(task: string, role: string): string {
  const words = (task ?? '').split(/\s+/).filter((w) => w);
  const roleWord = role ? role.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase()) : 'Agent';
  if (!words.length) {
    return roleWord;
  }
  const short = words.slice(0, WORK_WORDS).join(' ').replace(/[.,:;]+$/, '');
  return `${short}${words.length > WORK_WORDS ? '…' : ''} · ${roleWord}`;
}
