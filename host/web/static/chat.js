// The conversation view (web §6.3-6.9): one Conversation per opened session, the composer
// with queue/steer/stop, drafts in localStorage, the sessions list and switcher, and the reminder
// chip. Section numbers refer to docs/web.md.

import {
  applySplice,
  draftTooLong,
  emptyInbox,
  foldInbox,
  formatDuration,
  isoInstant,
  messageText,
  newSessionId,
  promptText,
  receiptSeq,
  reminderChip,
  reminderNotificationBody,
  reminderLabel,
  remindersPaused,
  relativeTime,
  sessionLabel,
  textOf,
  userMessageKind,
} from './format.js';
import {
  appendDeltaText,
  assistantRow,
  clock,
  contextRow,
  deltaRow,
  dividerRow,
  h,
  pendingRow,
  readingRow,
  refreshClocks,
  reminderRow,
  retryRow,
  settleToolRow,
  thinkingRow,
  toolRow,
  turnEndRow,
  unfinishedRow,
  userRow,
} from './render.js';
import { ConnectionLost, RpcError, SessionFeed } from './rpc.js';

const TAIL_LIMIT = 2000;
const CHUNK_ROWS = 64;
const FIRST_TURNS = 24;
const DRAFT_PREFIX = 'turnlog.draft.';
const NOTIFY_KEY = 'turnlog.notifyReminders';
const BUSY_TEXT = 'This session is open in another turnlog process; you can read it here but not send.';
const COLD_TEXT = 'Not open here: its reminders are paused.';
const NOT_SENT_TEXT = 'Not sent: the connection dropped before turnlog received it.';
const LOST_TEXT = 'Connection lost; try again.';

/** The browser's time zone, sampled now (web §6.2): a non-empty string, or null. */
export function browserZone() {
  const zone = new Intl.DateTimeFormat().resolvedOptions().timeZone;
  return typeof zone === 'string' && zone !== '' ? zone : null;
}

function readDraft(sessionId) {
  try {
    return localStorage.getItem(DRAFT_PREFIX + sessionId) ?? '';
  } catch {
    return '';
  }
}

function writeDraft(sessionId, text) {
  try {
    if (text === '') localStorage.removeItem(DRAFT_PREFIX + sessionId);
    else localStorage.setItem(DRAFT_PREFIX + sessionId, text);
  } catch {
    // storage full or refused: the draft still lives in the textarea
  }
}

function errorLine(error) {
  return error.code ? `${error.message} (${error.code})` : error.message;
}

// A provisional block's text received since its last frame goes in now (web §6.4).
function paintDeltas(block) {
  appendDeltaText(block.row, block.unpainted);
  block.unpainted = '';
}

// Per-turn context while rows are built in log order: the turn's start, its tool rows by call id
// and its last assistant text (for `Copy` under the turn).
function turnContext(startEvent = null) {
  return {
    open: startEvent !== null,
    number: startEvent?.data?.turn,
    step: undefined,
    startTime: startEvent?.time,
    toolRows: new Map(),
    lastText: '',
  };
}

// The conversation's rows go in chunks of CHUNK_ROWS: a new or growing row then makes the
// browser lay out its own chunk and the list of chunks, not every row of the conversation, so
// an event paints as fast late in a long conversation as early on (web §9 B2).
class RowList {
  constructor(element) {
    this.element = element;
  }

  clear() {
    this.element.replaceChildren();
  }

  append(...rows) {
    let chunk = this.element.lastElementChild;
    for (const row of rows) {
      if (chunk === null || chunk.childElementCount >= CHUNK_ROWS) {
        chunk = h('div', { class: 'rows-chunk' });
        this.element.append(chunk);
      }
      chunk.append(row);
    }
  }

  replace(rows) {
    this.clear();
    this.append(...rows);
  }

  /** Older rows above the first: chunks of their own. */
  prepend(rows) {
    const chunks = [];
    for (let i = 0; i < rows.length; i += CHUNK_ROWS) chunks.push(h('div', { class: 'rows-chunk' }, ...rows.slice(i, i + CHUNK_ROWS)));
    this.element.prepend(...chunks);
  }
}

/** One session as this tab shows it: its event window, rows, inbox, pending prompts and deltas. */
class Conversation {
  constructor(chat, sessionId, info) {
    this.chat = chat;
    this.rpc = chat.rpc;
    this.sessionId = sessionId;
    this.exists = info.exists;
    this.live = info.live;
    this.status = info.status ?? 'idle';
    this.feed = new SessionFeed(this.rpc, sessionId, (events) => this.receive(events));
    this.root = h('div', { class: 'conversation-session', 'data-session-id': sessionId });
    this.rowsEl = h('div', { class: 'rows' });
    this.rows = new RowList(this.rowsEl);
    this.pendingEl = h('div', { class: 'pending' });
    this.root.append(this.rowsEl, this.pendingEl);
    this.pending = new Map(); // rpcId -> {text, mode, row, lost}
    this.reset();
  }

  reset() {
    this.state = 'loading';
    this.header = null;
    this.events = [];
    this.renderedFrom = 0;
    this.held = [];
    this.turn = turnContext();
    this.queues = emptyInbox();
    this.inboxBroken = false;
    this.deltas = new Map();
    this.unfinished = null;
    this.error = null;
    this.reminders = [];
    this.olderLoading = false;
    this.rows.clear();
  }

  get seedLength() {
    return this.header?.seedLength ?? 0;
  }

  get firstSeq() {
    return this.events.length > 0 ? this.events[0].seq : (this.feed.nextSeq ?? 0);
  }

  /** Load the tail window and render its last turns (web §6.7); opening never resumes. */
  async load() {
    this.feed.reset();
    this.reset();
    this.chat.refreshChrome(this);
    if (!this.exists) {
      this.feed.startEmpty();
      this.ready();
      return;
    }
    let result;
    try {
      result = await this.feed.loadTail(TAIL_LIMIT);
    } catch (error) {
      if (error instanceof RpcError && error.code === 'session-not-found') {
        this.exists = false;
        this.feed.startEmpty();
        this.ready();
        return;
      }
      if (error instanceof ConnectionLost) return; // the reconnect loads it
      this.failed(error);
      return;
    }
    if (result === null) return; // reset meanwhile
    this.header = result.header;
    this.events = result.events.slice();
    await this.loadInbox(result.nextSeq);
    this.renderInitial();
    this.ready();
    this.refreshReminders();
  }

  failed(error) {
    if (!(error instanceof RpcError)) throw error;
    this.state = 'error';
    this.error = error;
    this.chat.refreshChrome(this);
  }

  // The inbox at the window's end: folded here when the window holds every splice since the
  // seed, else taken from session/inspect at the window's last seq.
  async loadInbox(nextSeq) {
    const seed = this.seedLength;
    this.inboxBroken = false;
    if (this.firstSeq <= seed || nextSeq === 0) {
      this.queues = this.foldOrEmpty(this.events, seed, emptyInbox());
      return;
    }
    try {
      const state = await this.rpc.call('session/inspect', { sessionId: this.sessionId, atSeq: nextSeq - 1 });
      if (state.inbox && !state.inbox.error) {
        this.queues = { 'next-turn': state.inbox['next-turn'] ?? [], 'next-step': state.inbox['next-step'] ?? [] };
        this.reminders = state.reminders?.active ?? [];
        return;
      }
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
    }
    this.inboxBroken = true; // only what the window shows is known; queued rows are omitted
    this.queues = emptyInbox();
  }

  foldOrEmpty(events, fromSeq, initial) {
    try {
      return foldInbox(events, fromSeq, initial);
    } catch (error) {
      console.error('turnlog web:', error.message);
      this.inboxBroken = true;
      return emptyInbox();
    }
  }

  ready() {
    this.state = 'ready';
    const held = this.held;
    this.held = [];
    this.applyLive(held);
    this.feed.drain();
    this.chat.refreshChrome(this);
  }

  /** Events from the feed, in seq order: applied now, or held until the window is rendered. */
  receive(events) {
    if (this.state !== 'ready') {
      this.held.push(...events);
      return;
    }
    this.applyLive(events);
  }

  /** A notification for this session arrived: it is live now (web §6.7). Returns false to drop it. */
  notified() {
    if (this.live) return true;
    this.live = true;
    this.chat.sessions.markLive(this.sessionId);
    if (this.exists && this.state !== 'error') {
      // Opening may have repaired the log without notifying: reload the window from the tail.
      this.load();
      return false;
    }
    this.exists = true;
    this.chat.refreshChrome(this);
    return true;
  }

  applyLive(events) {
    const fresh = events.filter((e) => this.events.length === 0 || e.seq > this.events[this.events.length - 1].seq);
    if (fresh.length === 0) return;
    this.events.push(...fresh);
    this.exists = true;
    this.removeUnfinished();
    const out = [];
    for (const event of fresh) {
      this.renderEvent(event, this.turn, out, true);
      if (event.type === 'agent/inbox/spliced') this.applyInbox(event);
    }
    this.rows.append(...out);
    this.renderUnfinished();
    this.renderQueue();
    this.chat.metrics.painted(this.sessionId, fresh);
    if (this.chat.current === this) {
      this.chat.followSoon();
      this.chat.refreshChrome(this);
    }
  }

  applyInbox(event) {
    const inserted = Array.isArray(event.data?.inserted) ? event.data.inserted : [];
    for (const message of inserted) {
      const rpcId = message?.source?.kind === 'user' ? message.source.rpcId : null;
      if (typeof rpcId === 'string' && this.pending.has(rpcId)) this.admitted(rpcId);
      if (message?.source?.kind === 'plugin' && message.source.plugin === 'schedule') this.chat.reminderArrived(message);
    }
    if (this.inboxBroken) return;
    try {
      this.queues = applySplice(this.queues, event.data, event.seq);
    } catch (error) {
      console.error('turnlog web:', error.message);
      this.inboxBroken = true;
      this.queues = emptyInbox();
    }
  }

  renderInitial() {
    const starts = [];
    this.events.forEach((event, index) => {
      if (event.type === 'turn/start') starts.push(index);
    });
    let from = 0;
    if (starts.length > FIRST_TURNS) from = starts[starts.length - FIRST_TURNS];
    else if (this.firstSeq > 0 && starts.length > 0) from = starts[0]; // a partial first turn waits for its start
    this.renderedFrom = from;
    this.turn = turnContext();
    const out = [];
    for (let i = from; i < this.events.length; i += 1) this.renderEvent(this.events[i], this.turn, out, false);
    this.rows.replace(out);
    this.renderUnfinished();
    this.renderQueue();
    if (this.chat.current === this) this.chat.scrollToBottom();
    this.chat.metrics.markPainted('first-paint', { sessionId: this.sessionId });
  }

  /** Render older turns above the first row, fetching an older page when needed (web §6.7). */
  async renderOlder() {
    if (this.state !== 'ready' || this.olderLoading) return;
    this.olderLoading = true;
    try {
      let from = this.olderStart();
      while (from === null) {
        const result = await this.feed.older(this.firstSeq, TAIL_LIMIT);
        if (this.state !== 'ready') return;
        const older = result.events.filter((e) => e.seq < this.firstSeq);
        if (older.length === 0) {
          from = 0;
          break;
        }
        this.events.unshift(...older);
        this.renderedFrom += older.length;
        from = this.olderStart();
      }
      if (from >= this.renderedFrom) return;
      const ctx = turnContext();
      const out = [];
      for (let i = from; i < this.renderedFrom; i += 1) this.renderEvent(this.events[i], ctx, out, false);
      this.renderedFrom = from;
      this.chat.keepPosition(() => this.rows.prepend(out));
    } catch (error) {
      if (!(error instanceof ConnectionLost || error instanceof RpcError)) throw error;
    } finally {
      this.olderLoading = false;
    }
  }

  // The index from which FIRST_TURNS more turns render above what is shown, or null when the
  // loaded events do not reach that far back and older ones exist.
  olderStart() {
    let count = 0;
    for (let i = this.renderedFrom - 1; i >= 0; i -= 1) {
      if (this.events[i].type === 'turn/start') {
        count += 1;
        if (count === FIRST_TURNS) return i;
      }
    }
    if (this.firstSeq === 0) return 0;
    return null;
  }

  renderEvent(event, ctx, out, live) {
    const first = out.length;
    this.renderRows(event, ctx, out, live);
    // Every row of a turn names its turn and step (`data-turn`, `data-step`), prompts and readings too.
    for (let i = first; i < out.length; i += 1) {
      const row = out[i];
      if (ctx.open && row.dataset.turn === undefined && Number.isInteger(ctx.number)) row.dataset.turn = ctx.number;
      if (ctx.open && row.dataset.step === undefined && Number.isInteger(ctx.step)) row.dataset.step = ctx.step;
    }
  }

  renderRows(event, ctx, out, live) {
    const data = event.data ?? {};
    const view = { now: this.chat.now };
    switch (event.type) {
      case 'turn/start':
        Object.assign(ctx, turnContext(event));
        break;
      case 'step/start':
        ctx.step = data.step;
        break;
      case 'step/end':
        ctx.step = undefined;
        break;
      case 'user/message': {
        const kind = userMessageKind(data);
        if (kind === 'user') out.push(userRow(event, view));
        else if (kind === 'reading') out.push(readingRow(event));
        else if (kind === 'reminder') {
          out.push(reminderRow(event));
          if (live) this.chat.announce(reminderLabel(messageText(data)));
        } else out.push(contextRow(event));
        break;
      }
      case 'assistant/message': {
        if (live) this.dropDelta(data.turn, data.step);
        const content = Array.isArray(data.message?.content) ? data.message.content : [];
        for (const block of content) {
          if (block?.type === 'reasoning') out.push(thinkingRow(event, String(block.text ?? '')));
          else if (block?.type === 'text') out.push(assistantRow(event, String(block.text ?? '')));
          else if (block?.type === 'tool-call') {
            const element = toolRow(event, block);
            ctx.toolRows.set(block.id, element);
            out.push(element);
          }
        }
        const text = textOf(content);
        if (text !== '') {
          ctx.lastText = text;
          if (live) this.chat.announce(text);
        }
        break;
      }
      case 'tool/call': {
        let element = ctx.toolRows.get(data.callId);
        if (element === undefined) {
          element = toolRow(event, { id: data.callId, name: data.name, arguments: data.arguments });
          ctx.toolRows.set(data.callId, element);
          out.push(element);
        }
        element.dataset.callSeq = event.seq;
        break;
      }
      case 'tool/result': {
        const callId = data.message?.source?.callId;
        let element = ctx.toolRows.get(callId);
        if (element === undefined) {
          element = toolRow(event, { id: callId, name: '(tool)', arguments: '' });
          ctx.toolRows.set(callId, element);
          out.push(element);
        }
        settleToolRow(element, event);
        break;
      }
      case 'llm/retry':
        if (live) this.dropDelta(data.turn, data.step);
        out.push(retryRow(event));
        break;
      case 'turn/end': {
        out.push(
          turnEndRow(event, {
            ...view,
            startTime: ctx.startTime,
            lastText: ctx.lastText,
            onFork: (seq, button) => this.chat.fork(this.sessionId, seq, button),
          }),
        );
        if (live) out.push(...this.settleDeltas(data.turn, data.reason?.kind === 'aborted'));
        ctx.open = false;
        break;
      }
      case 'session/end-seed':
        out.push(dividerRow(event, this.header));
        break;
      case 'schedule/change':
        if (live) this.refreshReminders();
        break;
      default:
        break;
    }
  }

  renderUnfinished() {
    this.removeUnfinished();
    if (!this.live && this.turn.open) {
      this.unfinished = unfinishedRow();
      this.rows.append(this.unfinished);
    }
  }

  removeUnfinished() {
    this.unfinished?.remove();
    this.unfinished = null;
  }

  renderQueue() {
    if (this.chat.current === this) this.chat.renderQueue(this.queues);
  }

  // --- live deltas (web §6.4) ---

  delta(turn, step, chunk) {
    if (this.state !== 'ready' || chunk?.type !== 'text-delta' || typeof chunk.text !== 'string') return;
    const key = `${turn}:${step}`;
    let block = this.deltas.get(key);
    if (block === undefined) {
      block = { turn, step, row: deltaRow(turn, step), unpainted: '', frame: 0, received: [] };
      this.deltas.set(key, block);
      this.rows.append(block.row);
      if (this.chat.current === this) this.chat.followSoon();
    }
    block.unpainted += chunk.text;
    block.received.push(Date.now());
    if (block.frame === 0) {
      block.frame = requestAnimationFrame(() => {
        block.frame = 0;
        paintDeltas(block);
        if (this.chat.current === this) this.chat.follow();
        this.chat.metrics.deltasPainted(block.received);
        block.received = [];
      });
    }
  }

  dropDelta(turn, step) {
    const key = `${turn}:${step}`;
    const block = this.deltas.get(key);
    if (block === undefined) return;
    cancelAnimationFrame(block.frame);
    block.row.remove();
    this.deltas.delete(key);
  }

  // At a turn's end its provisional blocks go, except after a stop: then they stay, greyed, and
  // are returned to be placed under `Stopped` (they were never logged, so a reload drops them).
  settleDeltas(turn, aborted) {
    const kept = [];
    for (const [key, block] of this.deltas) {
      if (block.turn !== turn) continue;
      cancelAnimationFrame(block.frame);
      if (aborted) {
        paintDeltas(block);
        block.row.classList.add('stopped');
        kept.push(block.row);
      } else {
        block.row.remove();
      }
      this.deltas.delete(key);
    }
    return kept;
  }

  // --- prompts (web §6.4, web §6.9) ---

  addPending(rpcId, text, mode) {
    const row = pendingRow(text, rpcId);
    this.pending.set(rpcId, { text, mode, row, lost: false });
    this.pendingEl.append(row);
    if (this.chat.current === this) this.chat.scrollToBottom();
  }

  /** The prompt's receipt or reply arrived: it was admitted; its stored draft is done with. */
  admitted(rpcId) {
    const pending = this.pending.get(rpcId);
    if (pending === undefined) return;
    pending.row.remove();
    this.pending.delete(rpcId);
    if (readDraft(this.sessionId) === pending.text) writeDraft(this.sessionId, '');
    this.exists = true;
  }

  /** A prompt turnlog refused, or one lost with the connection: its bubble goes, its text returns. */
  refused(rpcId) {
    const pending = this.pending.get(rpcId);
    if (pending === undefined) return null;
    pending.row.remove();
    this.pending.delete(rpcId);
    return pending;
  }

  /** After a reconnect: a lost prompt whose receipt is in the events was sent; else it was not (web §6.9). */
  resolveLost() {
    const notSent = [];
    for (const [rpcId, pending] of this.pending) {
      if (!pending.lost) continue;
      if (receiptSeq(this.events, rpcId) !== null) this.admitted(rpcId);
      else notSent.push(this.refused(rpcId));
    }
    return notSent;
  }

  // --- reminders (web §6.7, web §6.8) ---

  refreshReminders() {
    clearTimeout(this.reminderTimer);
    this.reminderTimer = setTimeout(() => this.fetchReminders(), 100);
  }

  async fetchReminders() {
    if (!this.exists || !this.rpc.connected) return;
    try {
      const state = await this.rpc.call('session/inspect', { sessionId: this.sessionId });
      this.reminders = Array.isArray(state.reminders?.active) ? state.reminders.active : [];
    } catch (error) {
      if (!(error instanceof RpcError || error instanceof ConnectionLost)) throw error;
      this.reminders = [];
    }
    if (this.chat.current === this) this.chat.refreshChrome(this);
  }
}

/** The chat side of the page: conversations, the composer, the sessions list and the switcher. */
export class ChatView {
  constructor({ rpc, elements, metrics, navigate, announce, setTitle, badge, notice }) {
    this.rpc = rpc;
    this.el = elements;
    this.metrics = metrics;
    this.navigate = navigate;
    this.announce = announce;
    this.setTitle = setTitle;
    this.badge = badge;
    this.notice = notice;
    this.conversations = new Map();
    this.visible = false;
    this.stuck = true;
    this.lastTop = 0;
    this.followFrame = 0; // the animation frame a followSoon() scroll waits for
    this.madeIds = new Set(); // ids this page made: no file exists for them yet
    this.current = null;
    this.connected = false;
    this.now = Date.now();
    this.sessions = new SessionList(this, elements);
    this.bindComposer();
    this.bindHeader();
    this.scheduleMidnight();
    setInterval(() => this.refreshRunState(), 1000);
  }

  // --- opening sessions ---

  /** Show session `sessionId` (web §6.7): its conversation is loaded once and then kept live. */
  open(sessionId) {
    const switching = this.current?.sessionId !== sessionId;
    let conversation = this.conversations.get(sessionId);
    if (conversation === undefined) {
      const info = this.sessions.info(sessionId);
      conversation = new Conversation(this, sessionId, {
        // A session the list does not show yet may still have a file: loading tells.
        exists: !this.madeIds.has(sessionId),
        live: info?.live ?? false,
        status: info?.status,
      });
      this.conversations.set(sessionId, conversation);
      if (this.connected) conversation.load();
    }
    this.current = conversation;
    if (switching) {
      this.el.conversation.replaceChildren(conversation.root);
      this.resized.observe(conversation.root);
      // The stored draft, unless it is a prompt still on its way (it stays stored until admitted).
      const draft = readDraft(sessionId);
      const sending = Array.from(conversation.pending.values()).some((p) => p.text === draft);
      this.el.input.value = sending ? '' : draft;
      this.clearComposerError();
    }
    this.renderQueue(conversation.queues);
    this.refreshChrome(conversation);
    this.scrollToBottom();
    this.sessions.select(sessionId);
    try {
      localStorage.setItem('turnlog.lastSession', sessionId);
    } catch {
      // private mode: nothing remembered
    }
  }

  /** A blank view with a page-made id; the first prompt creates the session (web §6.7). */
  newSession({ replace = false } = {}) {
    const sessionId = newSessionId();
    this.madeIds.add(sessionId);
    this.navigate(`/s/${sessionId}`, { replace });
  }

  lastViewed() {
    try {
      return localStorage.getItem('turnlog.lastSession');
    } catch {
      return null;
    }
  }

  /**
   * Connected: at first, or to a restarted host (`sameInstance` false), refresh the list, take each
   * opened session's live state from it and load its window from the tail; to the same host, catch
   * up from the next expected seq (web §6.10). Then resolve the prompts the connection lost.
   */
  async connectedAgain({ sameInstance }) {
    this.connected = true;
    const work = [];
    if (!sameInstance) {
      // What was live may be cold now, and events never made durable may be gone. Notifications
      // arriving while the list loads mark their sessions live again; the list adds the others.
      for (const conversation of this.conversations.values()) {
        conversation.live = false;
        conversation.status = 'idle';
        conversation.busy = false;
      }
      await this.sessions.refresh({ adopt: false });
      for (const conversation of this.conversations.values()) {
        const info = this.sessions.info(conversation.sessionId);
        if (info?.live && !conversation.live) {
          conversation.live = true;
          conversation.status = info.status ?? 'idle';
        }
      }
    } else {
      work.push(this.sessions.refresh());
    }
    for (const conversation of this.conversations.values()) {
      if (sameInstance && conversation.state === 'ready') work.push(conversation.feed.catchUp());
      else work.push(conversation.load());
    }
    await Promise.allSettled(work);
    for (const conversation of this.conversations.values()) {
      for (const pending of conversation.resolveLost()) {
        if (conversation === this.current) this.restoreDraft(pending.text);
        this.showComposerError(NOT_SENT_TEXT);
      }
    }
    this.refreshChrome(this.current);
  }

  disconnected() {
    this.connected = false;
    for (const conversation of this.conversations.values()) {
      for (const pending of conversation.pending.values()) pending.lost = true;
    }
    this.refreshChrome(this.current);
  }

  /** A `session.event` notification; false when no conversation of this tab holds the session. */
  event(sessionId, event) {
    const conversation = this.conversations.get(sessionId);
    if (conversation === undefined) return false;
    if (conversation.notified()) conversation.feed.push(event);
    return true;
  }

  status(sessionId, status) {
    this.sessions.setStatus(sessionId, status);
    const conversation = this.conversations.get(sessionId);
    if (conversation === undefined) return;
    conversation.notified();
    conversation.status = status;
    if (status === 'running') conversation.runningSince = Date.now();
    else conversation.stopRequested = false;
    if (conversation === this.current) this.refreshChrome(conversation);
  }

  delta(sessionId, params) {
    const conversation = this.conversations.get(sessionId);
    if (conversation === undefined) return;
    conversation.notified();
    conversation.delta(params.turn, params.step, params.chunk);
  }

  // --- chrome: header, notices, composer state ---

  refreshChrome(conversation) {
    if (!this.visible || conversation === null || conversation !== this.current) return;
    const label = this.sessions.label(conversation.sessionId) ?? conversation.sessionId;
    this.el.sessionLabel.textContent = label;
    this.setTitle(`${label} · turnlog`);
    this.el.chatLink.href = `/s/${encodeURIComponent(conversation.sessionId)}`;
    this.el.logLink.href = `/s/${encodeURIComponent(conversation.sessionId)}/log`;
    this.el.headerFork.hidden = !conversation.exists;
    this.el.headerFork.disabled = !this.connected;
    this.refreshRunState();
    this.refreshChip(conversation);
    this.renderNotices(conversation);
    this.refreshComposer();
  }

  refreshRunState() {
    const conversation = this.current;
    const running = conversation !== null && conversation.live && conversation.status === 'running';
    const state = this.el.runState;
    if (!running) {
      state.hidden = true;
      state.textContent = '';
    } else {
      const since = conversation.turn.open ? conversation.turn.startTime : (conversation.runningSince ?? Date.now());
      const elapsed = Date.now() - since;
      state.hidden = false;
      state.textContent = elapsed >= 15000 ? `Working… ${formatDuration(elapsed)}` : 'Working…';
    }
    this.el.stop.hidden = !running;
    this.el.stop.disabled = !running || !this.connected || conversation.stopRequested === true;
  }

  refreshChip(conversation) {
    const chip = this.el.chip;
    const active = conversation.live ? conversation.reminders : [];
    if (active.length === 0) {
      chip.hidden = true;
      this.el.chipPanel.hidden = true;
      chip.setAttribute('aria-expanded', 'false');
      return;
    }
    const sorted = active.slice().sort((a, b) => Date.parse(a.scheduledAt) - Date.parse(b.scheduledAt));
    const next = Date.parse(sorted[0].scheduledAt);
    chip.hidden = false;
    chip.replaceChildren(reminderChip(active.length), ' ', h('span', { class: 'chip-next' }, 'next '), clock(next));
    const list = h('ul', { class: 'reminder-list' });
    for (const view of sorted) {
      const at = Date.parse(view.scheduledAt);
      list.append(h('li', {}, clock(at), ' ', String(view.prompt ?? ''), view.state === 'overdue' ? ' (overdue)' : ''));
    }
    this.el.chipPanel.replaceChildren(list);
  }

  renderNotices(conversation) {
    const notices = [];
    if (conversation.state === 'error') {
      const error = conversation.error;
      notices.push(
        h(
          'div',
          { class: 'notice notice-error', 'data-kind': 'history-error' },
          h('p', {}, errorLine(error)),
          h('a', { href: `/s/${encodeURIComponent(conversation.sessionId)}/log`, 'data-route': '' }, 'Open the log inspector'),
        ),
      );
    }
    if (conversation.busy) notices.push(h('div', { class: 'notice', 'data-kind': 'busy' }, BUSY_TEXT));
    if (conversation.exists && !conversation.live && conversation.state === 'ready') {
      const open = h('button', { type: 'button', class: 'open-session' }, 'Open session');
      open.disabled = !this.connected;
      open.addEventListener('click', () => this.resume(conversation, open));
      const cold = h('div', { class: 'notice', 'data-kind': 'cold' }, h('p', {}, COLD_TEXT), open);
      if (conversation.reminders.length > 0) cold.append(h('p', {}, remindersPaused(conversation.reminders.length)));
      notices.push(cold);
    }
    this.el.notices.replaceChildren(...notices);
  }

  // Whether prompts can go out at all: connected, and the session neither unreadable nor busy.
  canSend() {
    const conversation = this.current;
    return this.connected && conversation !== null && conversation.state !== 'error' && conversation.busy !== true;
  }

  refreshComposer() {
    this.el.send.disabled = this.el.input.value.trim() === '' || !this.canSend();
  }

  renderQueue(queues) {
    const rows = [];
    for (const message of queues['next-step']) rows.push(this.queuedRow('steer', 'Steering: read at the next step', message));
    for (const message of queues['next-turn']) rows.push(this.queuedRow('queued', 'Queued', message));
    this.el.queue.replaceChildren(...rows);
    this.el.queue.hidden = rows.length === 0;
  }

  queuedRow(kind, label, message) {
    const text = message?.source?.kind === 'plugin' ? reminderLabel(messageText(message)) : promptText(message?.content);
    return h('div', { class: `queued queued-${kind}`, 'data-kind': kind, 'data-message-id': message?.id ?? '' }, h('span', { class: 'queued-label' }, label), ' ', h('span', { class: 'queued-text' }, text));
  }

  // --- composer (web §6.5) ---

  bindComposer() {
    const { input, composer, stop } = this.el;
    input.addEventListener('input', () => {
      if (this.current !== null) writeDraft(this.current.sessionId, input.value);
      this.refreshComposer();
      this.grow();
    });
    input.addEventListener('keydown', (event) => this.onKey(event));
    composer.addEventListener('submit', (event) => {
      event.preventDefault();
      this.send('queue');
    });
    stop.addEventListener('click', () => this.stop());
  }

  grow() {
    // Where `field-sizing: content` is not supported, grow the textarea by hand (up to 40% of the viewport).
    if (CSS.supports('field-sizing', 'content')) return;
    const input = this.el.input;
    input.style.height = 'auto';
    input.style.height = `${Math.min(input.scrollHeight, window.innerHeight * 0.4)}px`;
  }

  onKey(event) {
    if (event.key !== 'Enter') return;
    if (event.isComposing || event.keyCode === 229) return; // IME composition never sends
    if (event.shiftKey) return; // a newline
    event.preventDefault();
    if (event.repeat) return; // a held Enter sends once
    const steer = (event.ctrlKey || event.metaKey) && this.current?.status === 'running';
    this.send(steer ? 'steer' : 'queue');
  }

  restoreDraft(text) {
    if (this.el.input.value === '') {
      this.el.input.value = text;
      if (this.current !== null) writeDraft(this.current.sessionId, text);
    }
    this.refreshComposer();
  }

  clearComposerError() {
    this.el.composerError.replaceChildren();
  }

  showComposerError(text, ...extra) {
    this.el.composerError.replaceChildren(h('p', {}, text), ...extra);
  }

  /** Send the draft as a prompt (`queue` or `steer`); the zone is sampled now, never cached (web §6.2). */
  async send(mode, { text = this.el.input.value, withZone = true } = {}) {
    const conversation = this.current;
    if (text.trim() === '' || !this.canSend()) return;
    const tooLong = draftTooLong(text);
    if (tooLong !== null) {
      this.showComposerError(tooLong);
      return;
    }
    const rpcId = crypto.randomUUID();
    const params = { sessionId: conversation.sessionId, contentBlocks: [{ type: 'text', text }] };
    const zone = withZone ? browserZone() : null;
    if (zone !== null) params.clientTimeZone = zone;
    params.mode = mode;
    this.clearComposerError();
    conversation.addPending(rpcId, text, mode);
    if (this.el.input.value === text) this.el.input.value = ''; // the stored draft stays until admitted
    this.refreshComposer();
    this.el.input.focus();
    try {
      await this.rpc.call('session/prompt', params, rpcId);
      conversation.admitted(rpcId);
    } catch (error) {
      if (error instanceof ConnectionLost) {
        const pending = conversation.pending.get(rpcId);
        if (pending) pending.lost = true;
        return;
      }
      if (!(error instanceof RpcError)) throw error;
      conversation.refused(rpcId);
      if (conversation === this.current) {
        this.restoreDraft(text);
        this.promptRefused(conversation, error, text, mode);
      }
    }
  }

  promptRefused(conversation, error, text, mode) {
    if (error.code === 'invalid-time-zone') {
      const again = h('button', { type: 'button', class: 'send-without-zone' }, 'Send without time zone');
      again.addEventListener('click', () => {
        this.clearComposerError();
        this.send(mode, { text, withZone: false });
      });
      this.showComposerError(`turnlog refused the browser time zone ${JSON.stringify(error.data.value ?? null)}.`, again);
      return;
    }
    if (error.code === 'session-busy') {
      conversation.busy = true;
      this.refreshChrome(conversation);
    }
    this.showComposerError(errorLine(error));
  }

  async stop() {
    const conversation = this.current;
    if (conversation === null) return;
    conversation.stopRequested = true;
    this.refreshRunState();
    try {
      const result = await this.rpc.call('session/cancel', { sessionId: conversation.sessionId });
      if (result?.cancelled !== true) conversation.stopRequested = false;
    } catch (error) {
      conversation.stopRequested = false;
      this.requestFailed(error);
    }
    this.refreshRunState();
  }

  async resume(conversation, button) {
    button.disabled = true;
    try {
      await this.rpc.call('session/resume', { sessionId: conversation.sessionId });
      conversation.notified(); // live now: reload from the tail
    } catch (error) {
      if (error instanceof RpcError && error.code === 'session-busy') {
        conversation.busy = true;
        this.refreshChrome(conversation);
        return;
      }
      button.disabled = false;
      this.requestFailed(error);
    }
  }

  /** Fork at `boundarySeq` (the default boundary when undefined) and open the child (web §6.7). */
  async fork(sessionId, boundarySeq, button) {
    const params = { sessionId };
    if (boundarySeq !== undefined) params.boundarySeq = boundarySeq;
    if (button) button.disabled = true;
    try {
      const result = await this.rpc.call('session/fork', params);
      await this.sessions.refresh();
      this.navigate(`/s/${encodeURIComponent(result.sessionId)}`);
    } catch (error) {
      this.requestFailed(error);
    } finally {
      if (button) button.disabled = false;
    }
  }

  requestFailed(error) {
    if (error instanceof ConnectionLost) this.showComposerError(LOST_TEXT);
    else if (error instanceof RpcError) this.showComposerError(errorLine(error));
    else throw error;
  }

  bindHeader() {
    this.el.headerFork.addEventListener('click', () => {
      if (this.current !== null) this.fork(this.current.sessionId, undefined, this.el.headerFork);
    });
    this.el.chip.addEventListener('click', () => {
      const open = this.el.chip.getAttribute('aria-expanded') !== 'true';
      this.el.chip.setAttribute('aria-expanded', String(open));
      this.el.chipPanel.hidden = !open;
    });
    this.el.conversation.addEventListener('scroll', () => this.scrolled());
    const resized = new ResizeObserver(() => this.follow());
    resized.observe(this.el.conversation);
    this.resized = resized;
    this.el.newSession.addEventListener('click', () => this.newSession());
  }

  // --- reminders arriving (web §6.8) ---

  reminderArrived(message) {
    if (document.visibilityState !== 'hidden') return;
    this.badge();
    if (notificationsWanted() && Notification.permission === 'granted') {
      new Notification('Reminder', { body: reminderNotificationBody(messageText(message)) });
    }
  }

  // --- scrolling ---

  // Bottom-follow (web §6.7): the view stays at the bottom while the reader is there, whatever
  // grows or shrinks (new rows, a notice above, the composer), and stays put once they scroll up.
  atBottom() {
    const scroller = this.el.conversation;
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 8;
  }

  follow() {
    if (this.stuck) this.scrollToBottom();
  }

  // Live events scroll once per animation frame, not once each: reading scrollHeight right after
  // each append forced a layout per event, a burst of events one layout each (web §9 B2).
  followSoon() {
    if (this.followFrame) return;
    this.followFrame = requestAnimationFrame(() => {
      this.followFrame = 0;
      this.follow();
    });
  }

  scrollToBottom() {
    const scroller = this.el.conversation;
    scroller.scrollTop = scroller.scrollHeight;
    this.stuck = true;
    this.lastTop = scroller.scrollTop;
  }

  // Only a move up lets go of the bottom: a view that merely got shorter (a notice appeared
  // above it) scrolls no position away, and follow() brings the bottom back.
  scrolled() {
    const top = this.el.conversation.scrollTop;
    if (this.atBottom()) this.stuck = true;
    else if (top < this.lastTop - 1) this.stuck = false;
    this.lastTop = top;
    if (top < 200) this.current?.renderOlder();
  }

  // Prepending keeps the reader's rows where they were.
  keepPosition(change) {
    const scroller = this.el.conversation;
    const before = scroller.scrollHeight;
    change();
    scroller.scrollTop += scroller.scrollHeight - before;
    this.lastTop = scroller.scrollTop;
  }

  // Clocks say `HH:MM` only for today: re-render them all at the next local midnight (web §6.3).
  scheduleMidnight() {
    const now = new Date();
    const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1).getTime();
    setTimeout(() => {
      this.now = Date.now();
      for (const conversation of this.conversations.values()) refreshClocks(conversation.root, { now: this.now });
      this.sessions.render();
      this.scheduleMidnight();
    }, midnight - now.getTime() + 1000);
  }
}

// --- notifications preference (web §6.8) ---

function notificationsWanted() {
  try {
    return localStorage.getItem(NOTIFY_KEY) === 'on';
  } catch {
    return false;
  }
}

/** Wire the `Notify me about reminders` button: a per-browser preference asking for permission. */
export function bindNotifyToggle(button) {
  if (typeof Notification === 'undefined') {
    button.hidden = true;
    return;
  }
  const show = () => button.setAttribute('aria-pressed', String(notificationsWanted() && Notification.permission === 'granted'));
  show();
  button.addEventListener('click', async () => {
    if (notificationsWanted() && Notification.permission === 'granted') {
      localStorage.setItem(NOTIFY_KEY, 'off');
    } else {
      const permission = await Notification.requestPermission();
      localStorage.setItem(NOTIFY_KEY, permission === 'granted' ? 'on' : 'off');
    }
    show();
  });
}

// --- the sessions list and switcher (web §6.7, web §6.5) ---

class SessionList {
  constructor(chat, elements) {
    this.chat = chat;
    this.rpc = chat.rpc;
    this.el = elements;
    this.sessions = [];
    this.skipped = [];
    this.byId = new Map();
    this.labels = new Map();
    this.labelLoading = new Set();
    this.selected = null;
    this.refreshTimer = null;
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (entry.isIntersecting) this.fetchLabel(entry.target.dataset.sessionId);
      }
    });
    this.bindSwitcher();
  }

  info(sessionId) {
    return this.byId.get(sessionId) ?? null;
  }

  label(sessionId) {
    return this.labels.get(sessionId) ?? null;
  }

  /**
   * Refresh from `session/list`, newest `createdAt` first. With `adopt`, an opened session the
   * list shows live (resumed by another client, which notifies nothing) turns live here too.
   */
  async refresh({ adopt = true } = {}) {
    let result;
    try {
      result = await this.rpc.call('session/list', {});
    } catch (error) {
      if (error instanceof ConnectionLost) return;
      if (error instanceof RpcError) {
        this.chat.notice(errorLine(error));
        return;
      }
      throw error;
    }
    this.sessions = result.sessions.slice().reverse();
    this.byId = new Map(this.sessions.map((s) => [s.sessionId, s]));
    this.skipped = result.skipped ?? [];
    this.render();
    for (const conversation of this.chat.conversations.values()) {
      const info = this.byId.get(conversation.sessionId);
      if (adopt && info?.live && !conversation.live) conversation.notified();
      else if (info?.live) conversation.status = info.status ?? conversation.status;
    }
    this.chat.refreshChrome(this.chat.current);
  }

  /** A notification for a session this list does not know: refresh, at most every 500 ms (web §6.4). */
  refreshSoon() {
    if (this.refreshTimer !== null) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      this.refresh();
    }, 500);
  }

  known(sessionId) {
    return this.byId.has(sessionId);
  }

  markLive(sessionId) {
    const info = this.byId.get(sessionId);
    if (info && !info.live) {
      info.live = true;
      this.render();
    }
  }

  setStatus(sessionId, status) {
    const info = this.byId.get(sessionId);
    if (info === undefined) return;
    info.live = true;
    info.status = status;
    this.render();
  }

  select(sessionId) {
    this.selected = sessionId;
    for (const link of this.el.sessionList.querySelectorAll('a[aria-current]')) link.removeAttribute('aria-current');
    const item = this.el.sessionList.querySelector(`li[data-session-id="${CSS.escape(sessionId)}"] a`);
    if (item) item.setAttribute('aria-current', 'page');
  }

  render() {
    const now = Date.now();
    const items = this.sessions.map((session) => {
      const id = session.sessionId;
      const link = h('a', { href: `/s/${encodeURIComponent(id)}`, 'data-route': '', class: 'session-link' }, this.labels.get(id) ?? id);
      if (id === this.selected) link.setAttribute('aria-current', 'page');
      const subtitle = h('span', { class: 'session-subtitle' }, h('time', { datetime: isoInstant(session.createdAt), title: isoInstant(session.createdAt) }, relativeTime(session.createdAt, now)));
      if (session.live) {
        const state = session.status === 'running' ? 'running' : 'live';
        subtitle.append(' · ', h('span', { class: `dot dot-${state}`, 'data-state': state }, state));
      }
      if (session.parentSessionId) subtitle.append(` · fork of ${session.parentSessionId}`);
      return h('li', { 'data-session-id': id }, link, subtitle);
    });
    this.observer.disconnect();
    for (const item of items) this.observer.observe(item);
    this.el.sessionList.replaceChildren(...items);
    const skipped = this.skipped ?? [];
    this.el.unreadable.hidden = skipped.length === 0;
    this.el.unreadableList.replaceChildren(...skipped.map((s) => h('li', {}, h('code', {}, String(s.file)), `: ${s.error}`)));
  }

  async fetchLabel(sessionId) {
    if (!sessionId || this.labels.has(sessionId) || this.labelLoading.has(sessionId) || !this.rpc.connected) return;
    this.labelLoading.add(sessionId);
    try {
      const result = await this.rpc.call('session/history', { sessionId, fromSeq: 0, limit: 50 });
      const label = sessionLabel(result.events);
      if (label !== null) {
        this.labels.set(sessionId, label);
        const link = this.el.sessionList.querySelector(`li[data-session-id="${CSS.escape(sessionId)}"] a`);
        if (link) link.textContent = label;
        if (this.chat.current?.sessionId === sessionId) this.chat.refreshChrome(this.chat.current);
      }
    } catch (error) {
      if (!(error instanceof RpcError || error instanceof ConnectionLost)) throw error;
    } finally {
      this.labelLoading.delete(sessionId);
    }
  }

  // The switcher (Ctrl+K / Cmd+K): filter by label or id, arrows choose, Enter opens.
  bindSwitcher() {
    const { switcher, switcherInput, switcherList } = this.el;
    switcherInput.addEventListener('input', () => this.renderSwitcher());
    switcherInput.addEventListener('keydown', (event) => {
      const options = Array.from(switcherList.querySelectorAll('[role="option"]'));
      let index = options.findIndex((o) => o.getAttribute('aria-selected') === 'true');
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        if (options.length === 0) return;
        index = event.key === 'ArrowDown' ? Math.min(options.length - 1, index + 1) : Math.max(0, index - 1);
        this.choose(options, index);
      } else if (event.key === 'Enter') {
        event.preventDefault();
        const option = options[Math.max(0, index)];
        if (option) this.openFromSwitcher(option.dataset.sessionId);
      }
    });
    switcherList.addEventListener('click', (event) => {
      const option = event.target.closest('[role="option"]');
      if (option) this.openFromSwitcher(option.dataset.sessionId);
    });
    this.el.openSwitcher.addEventListener('click', () => this.openSwitcher());
    switcher.addEventListener('close', () => this.chat.el.input.focus());
  }

  openSwitcher() {
    const { switcher, switcherInput } = this.el;
    if (switcher.open) return;
    switcherInput.value = '';
    this.renderSwitcher();
    switcher.showModal();
    switcherInput.focus();
  }

  openFromSwitcher(sessionId) {
    this.el.switcher.close();
    this.chat.navigate(`/s/${encodeURIComponent(sessionId)}`);
  }

  renderSwitcher() {
    const filter = this.el.switcherInput.value.trim().toLowerCase();
    const matches = this.sessions.filter((s) => {
      const label = (this.labels.get(s.sessionId) ?? '').toLowerCase();
      return filter === '' || s.sessionId.toLowerCase().includes(filter) || label.includes(filter);
    });
    const options = matches.map((s, i) =>
      h(
        'li',
        { role: 'option', id: `switch-${i}`, 'data-session-id': s.sessionId, 'aria-selected': String(i === 0) },
        h('span', { class: 'switch-label' }, this.labels.get(s.sessionId) ?? s.sessionId),
        this.labels.has(s.sessionId) ? h('span', { class: 'switch-id' }, s.sessionId) : null,
      ),
    );
    this.el.switcherList.replaceChildren(...options);
    if (options.length > 0) this.el.switcherInput.setAttribute('aria-activedescendant', options[0].id);
    else this.el.switcherInput.removeAttribute('aria-activedescendant');
    this.el.switcherEmpty.hidden = options.length > 0;
  }

  choose(options, index) {
    options.forEach((option, i) => option.setAttribute('aria-selected', String(i === index)));
    this.el.switcherInput.setAttribute('aria-activedescendant', options[index].id);
    options[index].scrollIntoView({ block: 'nearest' });
  }
}
