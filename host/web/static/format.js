// Pure formatting and folds of the page (docs/web.md; section numbers below are web §N unless
// another page is named). Exports functions only and touches no DOM, so tests can import() it.

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

// --- ids and text ---------------------------------------------------------------------------------

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** True for a string that matches the session id rule `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`. */
export function isSessionId(value) {
  return typeof value === 'string' && SESSION_ID.test(value);
}

/** A page-made session id, `session-<32 hex>` (web §6.7). */
export function newSessionId() {
  return `session-${crypto.randomUUID().replaceAll('-', '')}`;
}

/** The text blocks of a content list, joined; other blocks give nothing. */
export function textOf(content) {
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const block of content) {
    if (block && block.type === 'text' && typeof block.text === 'string') text += block.text;
  }
  return text;
}

/** `text` cut to `max` characters (code points), the cut marked with `…`. */
export function cut(text, max) {
  const chars = Array.from(String(text));
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

/** The first non-blank line of `text`, trimmed and cut to `max` characters. */
export function firstLine(text, max = 80) {
  const line = String(text).split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
  return cut(line, max);
}

/** The UTF-8 length of `text` in bytes. */
export function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

export const MAX_DRAFT_BYTES = 1048576;

/** The page's refusal of a draft over {@link MAX_DRAFT_BYTES}, or null when it fits (web §6.5). */
export function draftTooLong(text) {
  const n = utf8Length(text);
  return n > MAX_DRAFT_BYTES ? `Message too long (${n} bytes; the limit is ${MAX_DRAFT_BYTES})` : null;
}

// --- durations and clocks --------------------------------------------------------------------------

/** A duration as time-context §6 writes it: `1d 7m 0s`; negative or missing counts as 0. */
export function formatDuration(ms) {
  let s = Math.floor(Math.max(0, Number.isFinite(ms) ? ms : 0) / 1000);
  const days = Math.floor(s / 86400);
  s -= days * 86400;
  const hours = Math.floor(s / 3600);
  s -= hours * 3600;
  const minutes = Math.floor(s / 60);
  s -= minutes * 60;
  const parts = [];
  if (days > 0) parts.push(`${days}d`);
  if (hours > 0) parts.push(`${hours}h`);
  if (minutes > 0) parts.push(`${minutes}m`);
  parts.push(`${s}s`);
  return parts.join(' ');
}

const formatters = new Map();
const DEFAULT_ZONE_TTL_MS = 60000;
let defaultFormatter = null;

// The formatter for the browser's zone, and that zone's name. The browser's zone can change while
// a page is open (the machine travels), so it is re-read once a minute; making a formatter costs
// far more than formatting, too much to do for every clock drawn (web §9 B5).
function browserFormatter() {
  const now = Date.now();
  if (defaultFormatter === null || now - defaultFormatter.made > DEFAULT_ZONE_TTL_MS) {
    const formatter = makeFormatter(undefined);
    defaultFormatter = { made: now, formatter, zone: formatter.resolvedOptions().timeZone };
  }
  return defaultFormatter;
}

/** The zone the page's clocks are shown in: the browser's (re-read once a minute). */
export function displayZone() {
  return browserFormatter().zone;
}

// A formatter for `timeZone`, or for the browser's zone when it is undefined.
function formatterFor(timeZone) {
  if (timeZone === undefined) return browserFormatter().formatter;
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = makeFormatter(timeZone);
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

function makeFormatter(timeZone) {
  return new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
  });
}

function wallParts(ms, timeZone) {
  const parts = {};
  for (const part of formatterFor(timeZone).formatToParts(ms)) parts[part.type] = part.value;
  return parts;
}

/**
 * A clock as the conversation shows it (web §6.3), 24-hour in `timeZone` (default: the browser's):
 * `HH:MM` on the same local day as `now`, `MMM D, HH:MM` in the same year, else `MMM D YYYY, HH:MM`.
 */
export function formatClock(ms, { now = Date.now(), timeZone } = {}) {
  const at = wallParts(ms, timeZone);
  const today = wallParts(now, timeZone);
  const clock = `${at.hour}:${at.minute}`;
  if (at.year === today.year && at.month === today.month && at.day === today.day) return clock;
  if (at.year === today.year) return `${at.month} ${at.day}, ${clock}`;
  return `${at.month} ${at.day} ${at.year}, ${clock}`;
}

/** `HH:MM:SS.mmm` in `timeZone` (the inspector's rows, web §6.12). */
export function formatClockMs(ms, { timeZone } = {}) {
  const at = wallParts(ms, timeZone);
  const millis = String(((ms % 1000) + 1000) % 1000).padStart(3, '0');
  return `${at.hour}:${at.minute}:${at.second}.${millis}`;
}

/** The canonical UTC instant `YYYY-MM-DDTHH:MM:SS.mmmZ`, or `` for an instant Date cannot hold. */
export function isoInstant(ms) {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? '' : date.toISOString();
}

/**
 * A clock's tooltip (web §6.2): the UTC instant and the zone it is shown in; with `clientTimeZone`
 * (a prompt's), the zone the prompt was sent with, or `no time zone` when it had none.
 */
export function clockTooltip(ms, { timeZone, prompt = false, clientTimeZone } = {}) {
  const zone = timeZone ?? displayZone();
  const base = `${isoInstant(ms)} · shown in ${zone}`;
  if (!prompt) return base;
  return clientTimeZone ? `${base} · sent with time zone ${clientTimeZone}` : `${base} · sent with no time zone`;
}

/** `+123 ms`, `+1.234 s`, or `+<duration>` from a minute on: the inspector's Δ column. */
export function formatDelta(ms) {
  if (!Number.isFinite(ms)) return '';
  const sign = ms < 0 ? '−' : '+';
  const size = Math.abs(ms);
  if (size < 1000) return `${sign}${size} ms`;
  if (size < 60000) return `${sign}${(size / 1000).toFixed(3)} s`;
  return `${sign}${formatDuration(size)}`;
}

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** How long ago `ms` was, in English: `just now`, `5 minutes ago`, `yesterday`, `3 months ago`. */
export function relativeTime(ms, now = Date.now()) {
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 45) return relative.format(-minutes, 'minute');
  const hours = Math.round(minutes / 60);
  if (hours < 22) return relative.format(-hours, 'hour');
  const days = Math.round(hours / 24);
  if (days < 26) return relative.format(-days, 'day');
  const months = Math.round(days / 30.44);
  if (months < 11) return relative.format(-months, 'month');
  return relative.format(-Math.max(1, Math.round(days / 365.25)), 'year');
}

/** The first instant after `now` at which the browser's local date changes. */
export function nextLocalMidnight(now = Date.now()) {
  const date = new Date(now);
  return new Date(date.getFullYear(), date.getMonth(), date.getDate() + 1).getTime();
}

// --- the title badge and reminder wording ----------------------------------------------------------

const BADGE = '⏰ ';

/** The document title with the reminder badge `⏰ ` in front, or without it (web §6.8). */
export function badgedTitle(title, badged) {
  const bare = title.startsWith(BADGE) ? title.slice(BADGE.length) : title;
  return badged ? BADGE + bare : bare;
}

function framedValue(text, key) {
  const prefix = `${key}: `;
  for (const line of text.split('\n')) {
    if (line.startsWith(prefix)) {
      try {
        return { value: JSON.parse(line.slice(prefix.length)) };
      } catch {
        return null;
      }
    }
  }
  return null;
}

/**
 * The prompts a schedule follow-up carries (schedule §11.4), as the chat front door extracts them:
 * `{batch: true, prompts}` from the `reminders_json:` line, `{batch: false, prompts: [p]}` from the
 * `reminder_prompt_json:` line, else `{batch: false, prompts: [<the raw text>]}`.
 */
export function reminderPrompts(text) {
  const batch = framedValue(text, 'reminders_json');
  if (batch && Array.isArray(batch.value)) {
    const prompts = batch.value.map((item) =>
      item && typeof item.reminder_prompt === 'string' ? item.reminder_prompt : JSON.stringify(item),
    );
    return { batch: true, prompts };
  }
  const one = framedValue(text, 'reminder_prompt_json');
  if (one && typeof one.value === 'string') return { batch: false, prompts: [one.value] };
  return { batch: false, prompts: [text] };
}

/** A reminder row's label: `⏰ Reminder: <prompt>`, or `⏰ <n> reminders: <p1>; <p2>` (web §6.3). */
export function reminderLabel(text) {
  const { batch, prompts } = reminderPrompts(text);
  return batch ? `⏰ ${prompts.length} reminders: ${prompts.join('; ')}` : `⏰ Reminder: ${prompts[0]}`;
}

/** The body of a reminder's desktop notification: its prompt, or a batch's prompts joined by `; `. */
export function reminderNotificationBody(text) {
  return reminderPrompts(text).prompts.join('; ');
}

/** The header chip of a live session with active reminders (web §6.8): `⏰ <n>`. */
export function reminderChip(count) {
  return `⏰ ${count}`;
}

/** A cold session's notice about its active reminders (web §6.7). */
export function remindersPaused(count) {
  return `${count} reminders paused until this session is open`;
}

// --- time readings ---------------------------------------------------------------------------------

const POLICY_PREFIXES = ['Client time zone for this request: ', 'Browser time zone for this request: '];

/**
 * What a time reading's policy line (time-context §4) says: `{kind: 'unique', zone}`,
 * `{kind: 'mixed', zones}`, `{kind: 'unavailable'}`, or null when the text has no policy line.
 * Readings written by deepseek-harness (`Browser time zone …`) are read the same way.
 */
export function readingPolicy(text) {
  for (const line of String(text).split('\n')) {
    const prefix = POLICY_PREFIXES.find((p) => line.startsWith(p));
    if (prefix === undefined) continue;
    const rest = line.slice(prefix.length);
    if (rest.startsWith('unavailable.')) return { kind: 'unavailable' };
    if (rest.startsWith('mixed ')) {
      const end = rest.indexOf('. Ask ');
      let zones = [];
      try {
        zones = JSON.parse(rest.slice('mixed '.length, end < 0 ? undefined : end));
      } catch {
        zones = [];
      }
      return { kind: 'mixed', zones: Array.isArray(zones) ? zones : [] };
    }
    const end = rest.indexOf('. ');
    return { kind: 'unique', zone: end < 0 ? rest.replace(/\.$/, '') : rest.slice(0, end) };
  }
  return null;
}

/** A reading row's label (web §6.3): `Time reading · <Zone>`, `… · mixed zones` or `… · zone unavailable`. */
export function readingLabel(text) {
  const policy = readingPolicy(text);
  if (policy === null || policy.kind === 'unavailable') return 'Time reading · zone unavailable';
  if (policy.kind === 'mixed') return 'Time reading · mixed zones';
  return `Time reading · ${policy.zone}`;
}

/** The text of a plugin message: its content text, else its first section's text. */
export function messageText(message) {
  const text = textOf(message?.content);
  if (text !== '') return text;
  const sections = message?.source?.sections;
  return Array.isArray(sections) && sections[0] && typeof sections[0].text === 'string' ? sections[0].text : '';
}

// --- what an event is in the conversation ----------------------------------------------------------

/**
 * The kind of conversation row a `user/message` makes (web §6.3): `user`, `reading`, `reminder` or
 * `context`.
 */
export function userMessageKind(message) {
  const source = message?.source;
  if (!source || typeof source !== 'object') return 'context';
  if (source.kind === 'user') return 'user';
  if (source.kind === 'plugin' && source.plugin === 'time-context') return 'reading';
  if (source.kind === 'plugin' && source.plugin === 'schedule') return 'reminder';
  return 'context';
}

/** A context row's label: `Context · <plugin, or source kind>`. */
export function contextLabel(message) {
  const source = message?.source ?? {};
  const name = typeof source.plugin === 'string' && source.plugin !== '' ? source.plugin : source.kind;
  return `Context · ${typeof name === 'string' && name !== '' ? name : 'unknown'}`;
}

/** The user-visible text of a prompt: its text blocks, an image block as `[image]`. */
export function promptText(content) {
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => (block?.type === 'image' ? '[image]' : block?.type === 'text' ? block.text : ''))
    .join('');
}

/** `Retrying model request (<n>/<max>) after <code>: <message>` for an `llm/retry` (web §6.3). */
export function retryText(data) {
  const failure = data?.failure ?? {};
  return `Retrying model request (${data?.retry}/${data?.maxRetries}) after ${failure.code}: ${failure.message}`;
}

/**
 * What a `turn/end` says, by reason (web §6.3): `null` for a completed turn (it shows a clock, `Ran for`,
 * `Copy` and `Fork` instead), else the one line for the reason.
 */
export function turnEndText(reason) {
  switch (reason?.kind) {
    case 'completed':
      return null;
    case 'aborted':
      return 'Stopped';
    case 'error': {
      const error = reason.error ?? {};
      return `This turn failed: ${error.message} (${error.code})`;
    }
    case 'max-tokens':
      return 'The reply hit the token limit; send "continue" to go on.';
    case 'blocked':
      return 'Blocked before the model was called';
    case 'interrupted':
      return 'Interrupted: turnlog stopped during this turn';
    default:
      return `The turn ended: ${JSON.stringify(reason ?? null)}`;
  }
}

export const UNFINISHED_TEXT = 'Unfinished: turnlog stopped during this turn';

/** `Ran for <duration>`: the time from a turn's `turn/start` to its `turn/end`. */
export function ranFor(startMs, endMs) {
  return `Ran for ${formatDuration(endMs - startMs)}`;
}

/** The divider of a fork child (web §6.3): `Forked from <parent> at seq <seedLength − 1>`. */
export function forkDivider(header) {
  return `Forked from ${header?.parentSession} at seq ${(header?.seedLength ?? 0) - 1}`;
}

/** The label a session gets in the list: its first prompt's first line (80 characters), else null. */
export function sessionLabel(events) {
  for (const event of events) {
    if (event.type === 'user/message' && userMessageKind(event.data) === 'user') {
      const line = firstLine(promptText(event.data.content), 80);
      if (line !== '') return line;
    }
  }
  return null;
}

/** The seq of the `agent/inbox/spliced` receipt that admitted the prompt with this rpcId, or null. */
export function receiptSeq(events, rpcId) {
  for (const event of events) {
    if (event.type !== 'agent/inbox/spliced' || !Array.isArray(event.data?.inserted)) continue;
    if (event.data.inserted.some((m) => m?.source?.kind === 'user' && m.source.rpcId === rpcId)) return event.seq;
  }
  return null;
}

// --- the inbox fold (web §6.6, host §5.3 step 2) -------------------------------------------------------

const TARGETS = ['next-turn', 'next-step'];

/** Two empty inbox queues. */
export function emptyInbox() {
  return { 'next-turn': [], 'next-step': [] };
}

function isIndex(value) {
  return Number.isInteger(value) && value >= 0 && value <= MAX_SAFE;
}

/**
 * The queues after one splice: remove `removedCount` items at `start`, then insert `inserted`
 * there. Returns new arrays and leaves `queues` as it was; a splice that is malformed or does not
 * fit throws `invalid persisted inbox splice at session seq <seq>`.
 */
export function applySplice(queues, data, seq) {
  const target = data?.target;
  const start = data?.start;
  const removed = data?.removedCount ?? 0;
  const inserted = data?.inserted;
  const queue = TARGETS.includes(target) ? queues[target] : undefined;
  if (
    queue === undefined ||
    !isIndex(start) ||
    !isIndex(removed) ||
    !Array.isArray(inserted) ||
    !inserted.every((m) => m !== null && typeof m === 'object' && !Array.isArray(m)) ||
    start + removed > queue.length
  ) {
    throw new Error(`invalid persisted inbox splice at session seq ${seq}`);
  }
  const next = queue.slice();
  next.splice(start, removed, ...inserted);
  return { ...queues, [target]: next };
}

/**
 * The inbox after `events`: the splices with seq ≥ `fromSeq` (the session's `seedLength`; inherited
 * splices never count) applied in order to `initial` (empty queues by default).
 */
export function foldInbox(events, fromSeq = 0, initial = emptyInbox()) {
  let queues = initial;
  for (const event of events) {
    if (event.type === 'agent/inbox/spliced' && event.seq >= fromSeq) queues = applySplice(queues, event.data, event.seq);
  }
  return queues;
}

/**
 * Each queued message's life, for the inspector's inbox lane (web §6.12): `{id, target, text, receiptSeq,
 * endSeq, canceled}` in receipt order, `endSeq` null while it is still queued. Throws like
 * {@link applySplice}.
 */
export function inboxLifecycles(events, fromSeq = 0) {
  const lives = [];
  const queues = { 'next-turn': [], 'next-step': [] };
  for (const event of events) {
    if (event.type !== 'agent/inbox/spliced' || event.seq < fromSeq) continue;
    const data = event.data;
    applySplice(queues, data, event.seq); // validation only
    const queue = queues[data.target];
    const gone = queue.splice(data.start, data.removedCount ?? 0);
    for (const life of gone) {
      life.endSeq = event.seq;
      life.canceled = data.outcome === 'canceled';
    }
    const added = data.inserted.map((message) => ({
      id: message.id ?? null,
      target: data.target,
      text: message?.source?.kind === 'plugin' ? reminderLabel(messageText(message)) : promptText(message.content),
      receiptSeq: event.seq,
      endSeq: null,
      canceled: false,
    }));
    queue.splice(data.start, 0, ...added);
    lives.push(...added);
  }
  return lives;
}

// --- the inspector (web §6.12) -------------------------------------------------------------------------

/** Turns of a log: `{turn, startSeq, endSeq, reason}`, `endSeq` and `reason` null while open. */
export function turnSpans(events) {
  const spans = [];
  let open = null;
  for (const event of events) {
    if (event.type === 'turn/start') {
      open = { turn: event.data?.turn, startSeq: event.seq, endSeq: null, reason: null };
      spans.push(open);
    } else if (event.type === 'turn/end' && open !== null) {
      open.endSeq = event.seq;
      open.reason = event.data?.reason?.kind ?? null;
      open = null;
    }
  }
  return spans;
}

/** Each reminder's lifecycle: `[{id, marks: [{op, seq, scheduledAt?}]}]` in first-seen order. */
export function reminderLifecycles(events) {
  const byId = new Map();
  for (const event of events) {
    if (event.type !== 'schedule/change') continue;
    const data = event.data ?? {};
    const id = data.operation === 'create' ? data.schedule?.id : data.id;
    if (typeof id !== 'string') continue;
    if (!byId.has(id)) byId.set(id, { id, marks: [] });
    const mark = { op: String(data.operation), seq: event.seq };
    if (data.operation === 'create') {
      mark.scheduledAt = data.schedule?.scheduledAt;
      mark.prompt = data.schedule?.prompt;
    }
    if (typeof data.acceptedAt === 'string') mark.acceptedAt = data.acceptedAt;
    byId.get(id).marks.push(mark);
  }
  return Array.from(byId.values());
}

/** The time readings of a log: `[{seq, label}]`, label a zone, `mixed` or `unavailable`. */
export function readingMarks(events) {
  const marks = [];
  for (const event of events) {
    if (event.type !== 'user/message' || userMessageKind(event.data) !== 'reading') continue;
    const policy = readingPolicy(messageText(event.data));
    const label = policy === null || policy.kind === 'unavailable' ? 'unavailable' : policy.kind === 'mixed' ? 'mixed' : policy.zone;
    marks.push({ seq: event.seq, label });
  }
  return marks;
}

function compact(value) {
  try {
    return JSON.stringify(value) ?? 'undefined';
  } catch {
    return String(value);
  }
}

function sourceName(source) {
  if (!source || typeof source !== 'object') return '?';
  if (source.kind === 'plugin') return String(source.plugin);
  return String(source.kind);
}

/** One line about an event's data for the inspector's timeline, at most `max` characters. */
export function eventSummary(event, max = 120) {
  const data = event.data;
  let text;
  switch (event.type) {
    case 'user/message':
      text = `${sourceName(data?.source)}: ${promptText(data?.content) || messageText(data)}`;
      break;
    case 'assistant/message':
    case 'tool/result': {
      const content = data?.message?.content ?? [];
      const parts = [];
      for (const block of content) {
        if (block?.type === 'text' || block?.type === 'reasoning') parts.push(block.text);
        else if (block?.type === 'tool-call') parts.push(`${block.name} ${block.arguments}`);
        else if (block?.type === 'tool-result') parts.push((block.isError ? 'error: ' : '') + promptText(block.content));
      }
      text = parts.join(' · ');
      break;
    }
    case 'tool/call':
      text = `${data?.name} ${data?.arguments}`;
      break;
    case 'agent/inbox/spliced': {
      const inserted = Array.isArray(data?.inserted) ? data.inserted : [];
      const removed = data?.removedCount ?? 0;
      const what = inserted.map((m) => promptText(m?.content) || sourceName(m?.source)).join('; ');
      text = `${data?.target} @${data?.start}${removed ? ` −${removed}` : ''}${inserted.length ? ` +${inserted.length} ${what}` : ''}${data?.outcome ? ` (${data.outcome})` : ''}`;
      break;
    }
    case 'turn/start':
      text = `turn ${data?.turn}`;
      break;
    case 'step/start':
    case 'step/end':
      text = `turn ${data?.turn} step ${data?.step}`;
      break;
    case 'turn/end':
      text = `turn ${data?.turn} ${data?.reason?.kind}${data?.reason?.kind === 'error' ? `: ${data.reason.error?.code} ${data.reason.error?.message}` : ''}`;
      break;
    case 'schedule/change':
      text =
        data?.operation === 'create'
          ? `create ${data.schedule?.id} ${data.schedule?.kind} ${data.schedule?.scheduledAt} ${compact(data.schedule?.prompt)}`
          : `${data?.operation} ${data?.id}${data?.acceptedAt ? ` ${data.acceptedAt}` : ''}`;
      break;
    case 'request/header':
      text = `${data?.reason} ${data?.header?.config?.provider}/${data?.header?.config?.model}`;
      break;
    case 'llm/retry':
      text = retryText(data);
      break;
    default:
      text = compact(data);
  }
  return cut(String(text).replace(/\s+/g, ' ').trim(), max);
}

/** The repair preview of a cold session (web §6.12) from `session/inspect`'s `repair` object. */
export function repairPreview(repair) {
  if (repair === null || repair === undefined) return 'repair: none needed';
  const parts = [];
  if (repair.droppedBytes > 0 || repair.droppedRecords > 0) {
    const defect = repair.defect;
    const where = defect ? ` from line ${defect.line}, byte ${defect.offset} (${defect.reason})` : '';
    parts.push(`drop ${repair.droppedBytes} bytes (${repair.droppedRecords} records)${where}`);
  }
  const closers = Array.isArray(repair.closers) ? repair.closers : [];
  if (closers.length > 0) {
    const names = closers.map((e) => (e.type === 'turn/end' ? `turn/end ${e.data?.reason?.kind}` : e.type));
    parts.push(`append ${names.join(', ')}`);
  }
  return parts.length === 0 ? 'repair: none needed' : `repair: opening will ${parts.join(' and ')}`;
}
