// The log inspector at /s/<id>/log (web §6.12): header, lanes, a virtualised timeline with
// filters, the replay slider with the state panel from session/inspect, download and fork at a seq.

import {
  clockTooltip,
  displayZone,
  eventSummary,
  formatClock,
  formatClockMs,
  formatDelta,
  inboxLifecycles,
  isoInstant,
  promptText,
  readingMarks,
  reminderLabel,
  reminderLifecycles,
  repairPreview,
  turnSpans,
  messageText,
} from './format.js';
import { copyButton, h } from './render.js';
import { ConnectionLost, RpcError, SessionFeed } from './rpc.js';

const PAGE = 10000;
const ROW_HEIGHT = 24;
const OVERSCAN = 20;

function errorLine(error) {
  return error.code ? `${error.message} (${error.code})` : error.message;
}

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** The inspector. One session at a time; it follows a live session's new events. */
export class LogView {
  constructor({ rpc, root, forkDialog, metrics, sessionInfo }) {
    this.rpc = rpc;
    this.sessionInfo = sessionInfo;
    this.root = root;
    this.dialog = forkDialog;
    this.metrics = metrics;
    this.sessionId = null;
    this.feed = null;
    this.live = false;
    this.build();
    this.reset();
  }

  // --- skeleton ---

  build() {
    this.titleEl = h('h2', { class: 'log-title' });
    this.download = h('a', { class: 'download', download: '' }, 'Download .jsonl');
    this.facts = h('dl', { class: 'facts' });
    this.notice = h('div', { class: 'log-notice', role: 'alert' });
    const header = h('header', { class: 'log-header' }, this.titleEl, this.download, this.facts);

    this.lanes = h('div', { class: 'lanes' });
    const lanes = h('section', { class: 'lanes-section', 'aria-label': 'Lanes' }, h('h3', {}, 'Lanes'), this.lanes);

    this.slider = h('input', { type: 'range', min: '0', max: '0', value: '0', 'aria-label': 'Replay to seq', class: 'replay-slider' });
    this.seqInput = h('input', { type: 'number', min: '0', value: '0', 'aria-label': 'Seq', class: 'replay-seq', inputmode: 'numeric' });
    this.forkButton = h('button', { type: 'button', class: 'fork-at' }, 'Fork at seq 0');
    this.statePanel = h('div', { class: 'state-panel', 'aria-label': 'State at this seq' });
    const replay = h(
      'section',
      { class: 'replay', 'aria-label': 'Replay' },
      h('h3', {}, 'Replay'),
      h('div', { class: 'replay-controls' }, this.slider, this.seqInput, this.forkButton),
      this.statePanel,
    );

    this.typeFilter = h('select', { 'aria-label': 'Filter by type' }, h('option', { value: '' }, 'All types'));
    this.textFilter = h('input', { type: 'search', 'aria-label': 'Filter by text', placeholder: 'Filter by text' });
    const filters = h('div', { class: 'filters' }, this.typeFilter, this.textFilter);

    this.spacer = h('div', { class: 'timeline-spacer' });
    this.timeline = h(
      'div',
      { class: 'timeline', role: 'listbox', 'aria-label': 'Events', tabindex: '0' },
      this.spacer,
    );
    this.envelope = h('pre', { class: 'envelope-text' });
    const envelopeCopy = copyButton(() => this.envelope.textContent);
    this.envelopeSection = h('section', { class: 'envelope', 'aria-label': 'Selected event', hidden: true }, h('h3', {}, 'Event'), this.envelope, envelopeCopy);
    const timeline = h('section', { class: 'timeline-section', 'aria-label': 'Timeline' }, h('h3', {}, 'Timeline'), filters, this.timeline, this.envelopeSection);

    this.root.replaceChildren(header, this.notice, lanes, replay, timeline);
    this.events = [];
    this.visible = [];
    this.bind();
  }

  bind() {
    this.slider.addEventListener('input', () => this.replayTo(Number(this.slider.value)));
    this.slider.addEventListener('keydown', (event) => this.sliderKey(event));
    this.seqInput.addEventListener('change', () => this.replayTo(Number(this.seqInput.value)));
    this.typeFilter.addEventListener('change', () => this.refilter());
    this.textFilter.addEventListener('input', () => this.refilter());
    this.timeline.addEventListener('scroll', () => this.paintRows());
    this.timeline.addEventListener('click', (event) => {
      const row = event.target.closest('[data-index]');
      if (row) this.select(Number(row.dataset.index));
    });
    this.timeline.addEventListener('keydown', (event) => this.timelineKey(event));
    this.forkButton.addEventListener('click', () => this.askFork());
    this.dialog.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.fork();
    });
    this.dialog.cancel.addEventListener('click', () => this.dialog.element.close());
    new ResizeObserver(() => this.paintRows()).observe(this.timeline);
  }

  // --- opening ---

  /** Show session `sessionId`, replayed to `seq` when given (the URL's `?seq=N`). */
  async open(sessionId, seq) {
    if (this.sessionId !== sessionId) {
      this.sessionId = sessionId;
      this.wantedSeq = seq;
      this.live = false;
      await this.load();
    } else if (seq !== null && seq !== this.atSeq) {
      this.replayTo(seq);
    }
  }

  async load() {
    const sessionId = this.sessionId;
    this.feed?.reset();
    this.reset();
    this.titleEl.replaceChildren('Session ', h('code', {}, sessionId));
    this.download.href = `/api/sessions/${encodeURIComponent(sessionId)}.jsonl`;
    if (!this.rpc.connected) return; // connectedAgain() loads it
    // Live stays live within one host instance; the list tells about a session opened elsewhere.
    this.live = this.live || (this.sessionInfo(sessionId)?.live ?? false);
    this.feed = new SessionFeed(this.rpc, sessionId, (events) => this.append(events));
    const feed = this.feed;
    try {
      const [header, state] = await Promise.all([feed.loadAll(PAGE), this.inspect(null)]);
      if (header === null || feed !== this.feed) return;
      this.header = header;
      this.live = this.live || (state?.live ?? false);
      this.repair = state?.repair ?? null;
    } catch (error) {
      if (error instanceof ConnectionLost) return;
      if (!(error instanceof RpcError)) throw error;
      this.notice.textContent = errorLine(error);
      return;
    }
    if (this.reloadWanted) {
      this.load(); // it turned live while loading: what opening repaired was read too early
      return;
    }
    this.loaded = true;
    this.renderFacts();
    const last = this.events.length - 1;
    // A link to `?seq=N` opens at that row; otherwise the timeline starts at its first event.
    const wanted = this.wantedSeq !== null;
    this.replayTo(wanted && this.wantedSeq <= last ? this.wantedSeq : last, { keepUrl: !wanted, reveal: wanted });
    this.metrics.markPainted('inspector-ready', { events: this.events.length });
  }

  reset() {
    this.events = [];
    this.turnOf = [];
    this.inStep = [];
    this.visible = [];
    this.types = new Set();
    this.header = null;
    this.reloadWanted = false;
    this.loaded = false;
    this.repair = null;
    this.selected = null;
    this.atSeq = null;
    this.openTurn = 0;
    this.stepOpen = false;
    this.notice.textContent = '';
    this.facts.replaceChildren();
    this.lanes.replaceChildren();
    this.statePanel.replaceChildren();
    this.envelopeSection.hidden = true;
    this.typeFilter.replaceChildren(h('option', { value: '' }, 'All types'));
    this.textFilter.value = '';
    this.paintRows();
  }

  /** Connected again: same instance → catch up; a restarted host → load again (web §6.10). */
  connectedAgain({ sameInstance }) {
    if (this.sessionId === null) return;
    if (sameInstance && this.loaded) {
      this.feed.catchUp();
    } else {
      if (!sameInstance) this.live = false; // a restarted host has opened nothing yet
      this.load();
    }
  }

  /** A notification: a cold session turning live reloads, since opening may have repaired it. */
  event(sessionId, event) {
    if (sessionId !== this.sessionId || this.feed === null) return;
    if (!this.live) {
      this.live = true;
      if (this.loaded) {
        this.load();
        return;
      }
      this.reloadWanted = true;
    }
    this.feed.push(event);
  }

  inspect(atSeq) {
    const params = { sessionId: this.sessionId };
    if (atSeq !== null) params.atSeq = atSeq;
    return this.rpc.call('session/inspect', params).catch((error) => {
      if (error instanceof RpcError && error.code === 'unknown-method') return null;
      throw error;
    });
  }

  // --- events ---

  append(events) {
    const filterType = this.typeFilter.value;
    const filterText = this.textFilter.value.trim().toLowerCase();
    let newType = false;
    for (const event of events) {
      const index = this.events.length;
      this.events.push(event);
      if (event.type === 'turn/start') this.openTurn = Number.isInteger(event.data?.turn) ? event.data.turn : this.openTurn + 1;
      this.turnOf.push(this.openTurn);
      if (event.type === 'step/start') this.stepOpen = true;
      this.inStep.push(this.stepOpen && event.type !== 'step/start');
      if (event.type === 'step/end') this.stepOpen = false;
      if (event.type === 'turn/end') {
        this.openTurn = 0;
        this.stepOpen = false;
      }
      if (!this.types.has(event.type)) {
        this.types.add(event.type);
        newType = true;
      }
      if (this.matches(index, filterType, filterText)) this.visible.push(index);
    }
    if (newType) this.renderTypes();
    const last = this.events.length - 1;
    const following = this.atSeq === null || this.atSeq === last - events.length;
    this.slider.max = String(Math.max(0, last));
    this.seqInput.max = String(Math.max(0, last));
    this.spacer.style.height = `${this.visible.length * ROW_HEIGHT}px`;
    this.paintRows();
    this.scheduleLanes();
    if (this.loaded) {
      this.renderFacts();
      if (following) this.replayTo(last, { keepUrl: true, reveal: false }); // the reader's scroll stays
    }
  }

  matches(index, type, text) {
    const event = this.events[index];
    if (type !== '' && event.type !== type) return false;
    if (text === '') return true;
    return `${event.seq} ${event.type} ${eventSummary(event, 10000)}`.toLowerCase().includes(text);
  }

  refilter() {
    const type = this.typeFilter.value;
    const text = this.textFilter.value.trim().toLowerCase();
    this.visible = [];
    for (let i = 0; i < this.events.length; i += 1) if (this.matches(i, type, text)) this.visible.push(i);
    this.spacer.style.height = `${this.visible.length * ROW_HEIGHT}px`;
    this.paintRows();
  }

  renderTypes() {
    const current = this.typeFilter.value;
    const options = [h('option', { value: '' }, 'All types')];
    for (const type of Array.from(this.types).sort()) options.push(h('option', { value: type }, type));
    this.typeFilter.replaceChildren(...options);
    this.typeFilter.value = current;
  }

  // --- the virtualised timeline ---

  paintRows() {
    const top = this.timeline.scrollTop;
    const height = this.timeline.clientHeight || 480;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.visible.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const rows = [];
    for (let position = first; position < last; position += 1) rows.push(this.row(position));
    this.spacer.replaceChildren(...rows);
  }

  row(position) {
    const index = this.visible[position];
    const event = this.events[index];
    const previous = index > 0 ? this.events[index - 1] : null;
    const turn = this.turnOf[index];
    const classes = ['trow'];
    if (turn > 0) classes.push(turn % 2 === 1 ? 'band-odd' : 'band-even');
    if (this.inStep[index]) classes.push('in-step');
    if (this.atSeq !== null && event.seq > this.atSeq) classes.push('later');
    const selected = this.selected === index;
    const element = h(
      'div',
      {
        class: classes.join(' '),
        role: 'option',
        id: `event-${index}`,
        'aria-selected': String(selected),
        'aria-setsize': this.visible.length,
        'aria-posinset': position + 1,
        'data-index': index,
        'data-seq': event.seq,
        'data-kind': event.type,
      },
      h('span', { class: 'c-seq' }, String(event.seq)),
      h('time', { class: 'c-time', datetime: isoInstant(event.time), title: clockTooltip(event.time) }, formatClockMs(event.time)),
      h('span', { class: 'c-delta' }, previous ? formatDelta(event.time - previous.time) : ''),
      h('span', { class: 'c-type' }, event.type),
      h('span', { class: 'c-summary' }, eventSummary(event)),
    );
    element.style.transform = `translateY(${position * ROW_HEIGHT}px)`;
    return element;
  }

  select(index, { scroll = false } = {}) {
    if (!Number.isInteger(index) || index < 0 || index >= this.events.length) return;
    this.selected = index;
    this.envelope.textContent = pretty(this.events[index]);
    this.envelopeSection.hidden = false;
    this.timeline.setAttribute('aria-activedescendant', `event-${index}`);
    if (scroll) {
      let position = this.visible.indexOf(index);
      if (position < 0) {
        this.typeFilter.value = '';
        this.textFilter.value = '';
        this.refilter();
        position = index;
      }
      this.reveal(position);
    }
    this.paintRows();
  }

  /** Scroll the row at `position` (in the filtered rows) to the middle unless it is in view. */
  reveal(position) {
    const top = position * ROW_HEIGHT;
    if (top < this.timeline.scrollTop || top > this.timeline.scrollTop + this.timeline.clientHeight - ROW_HEIGHT) {
      this.timeline.scrollTop = Math.max(0, top - this.timeline.clientHeight / 2);
    }
  }

  /** The position of the last shown row at or before `seq` (binary search: rows are in seq order), or -1. */
  positionAtOrBefore(seq) {
    let low = 0;
    let high = this.visible.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.events[this.visible[middle]].seq <= seq) low = middle + 1;
      else high = middle;
    }
    return low - 1;
  }

  /** Select the row of `seq` and bring it into view (a lane mark's link). */
  selectSeq(seq) {
    this.select(this.events.findIndex((e) => e.seq === seq), { scroll: true });
  }

  timelineKey(event) {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    event.preventDefault();
    const position = this.selected === null ? -1 : this.visible.indexOf(this.selected);
    const next = event.key === 'ArrowDown' ? Math.min(this.visible.length - 1, position + 1) : Math.max(0, position - 1);
    if (next >= 0) {
      this.select(this.visible[next]);
      const top = next * ROW_HEIGHT;
      if (top < this.timeline.scrollTop) this.timeline.scrollTop = top;
      else if (top + ROW_HEIGHT > this.timeline.scrollTop + this.timeline.clientHeight) {
        this.timeline.scrollTop = top + ROW_HEIGHT - this.timeline.clientHeight;
      }
    }
  }

  // --- replay ---

  sliderKey(event) {
    if (!event.shiftKey || !['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'].includes(event.key)) return;
    event.preventDefault();
    const forward = event.key === 'ArrowRight' || event.key === 'ArrowUp';
    const starts = this.events.filter((e) => e.type === 'turn/start').map((e) => e.seq);
    const at = this.atSeq ?? 0;
    const target = forward ? starts.find((s) => s > at) : starts.filter((s) => s < at).pop();
    const last = this.events.length - 1;
    this.replayTo(target ?? (forward ? last : 0));
  }

  /**
   * Replay to seq `seq`: later rows dim, the timeline scrolls to its row (or, when a filter hides
   * it, to the last shown row before it) unless `reveal` is false, the state panel follows, and
   * the URL keeps `?seq=N`.
   */
  replayTo(seq, { keepUrl = false, reveal = true } = {}) {
    const last = this.events.length - 1;
    if (last < 0) {
      this.atSeq = null;
      this.forkButton.disabled = true;
      this.statePanel.replaceChildren(h('p', {}, 'This session has no events yet.'));
      return;
    }
    const at = Math.min(last, Math.max(0, Number.isFinite(seq) ? Math.trunc(seq) : last));
    this.atSeq = at;
    this.slider.value = String(at);
    this.seqInput.value = String(at);
    this.forkButton.textContent = `Fork at seq ${at}`;
    this.forkButton.disabled = !this.rpc.connected;
    if (!keepUrl) {
      const url = new URL(location.href);
      url.searchParams.set('seq', String(at));
      history.replaceState(history.state, '', url.pathname + url.search);
    }
    if (reveal) this.reveal(Math.max(0, this.positionAtOrBefore(at)));
    this.paintRows();
    clearTimeout(this.stateTimer);
    this.stateTimer = setTimeout(() => this.loadState(at), 100);
  }

  async loadState(atSeq) {
    let state;
    try {
      state = await this.inspect(atSeq);
    } catch (error) {
      if (error instanceof ConnectionLost) {
        this.statePanel.replaceChildren(h('p', {}, 'Connection lost; try again.'));
        return;
      }
      if (!(error instanceof RpcError)) throw error;
      this.statePanel.replaceChildren(h('p', {}, errorLine(error)));
      return;
    }
    if (atSeq !== this.atSeq) return;
    if (state === null) {
      this.statePanel.replaceChildren(h('p', {}, 'This turnlog cannot replay state (no session/inspect).'));
      return;
    }
    this.statePanel.replaceChildren(...this.stateView(state));
  }

  stateView(state) {
    const out = [h('h4', {}, `State at seq ${state.atSeq}`)];
    const open = state.openTurn;
    out.push(h('p', { 'data-kind': 'open-turn' }, open ? `Open turn ${open.turn}${open.step !== null && open.step !== undefined ? `, step ${open.step}` : ', between steps'}` : 'No open turn'));
    const inbox = state.inbox ?? {};
    if (inbox.error) out.push(h('p', {}, `Inbox: ${inbox.error}`));
    else {
      for (const [target, title] of [['next-turn', 'Queued for the next turn'], ['next-step', 'Steering for the next step']]) {
        const items = Array.isArray(inbox[target]) ? inbox[target] : [];
        const list = h('ul', { 'data-kind': target });
        for (const message of items) {
          const text = message?.source?.kind === 'plugin' ? reminderLabel(messageText(message)) : promptText(message?.content);
          list.append(h('li', {}, text));
        }
        out.push(h('h5', {}, `${title} (${items.length})`), items.length ? list : h('p', {}, 'empty'));
      }
    }
    const reminders = state.reminders ?? {};
    if (reminders.error) out.push(h('p', {}, `Reminders: ${reminders.error}`));
    else {
      const active = Array.isArray(reminders.active) ? reminders.active : [];
      out.push(h('h5', {}, `Active reminders (${active.length})`));
      const list = h('ul', { 'data-kind': 'reminders' });
      for (const view of active) {
        const at = Date.parse(view.scheduledAt);
        list.append(
          h(
            'li',
            { 'data-schedule-id': view.id, 'data-state': view.state },
            `${view.id} · ${view.state} · `,
            h('time', { datetime: view.scheduledAt, title: clockTooltip(at) }, formatClock(at)),
            ` · ${view.prompt}`,
          ),
        );
      }
      out.push(active.length ? list : h('p', {}, 'none'));
    }
    return out;
  }

  // --- header facts ---

  renderFacts() {
    const header = this.header ?? {};
    const facts = [];
    const fact = (name, ...value) => facts.push(h('dt', {}, name), h('dd', {}, ...value));
    fact('Session', h('code', {}, String(header.id ?? this.sessionId)));
    if (Number.isFinite(header.createdAt)) {
      fact('Created', h('time', { datetime: isoInstant(header.createdAt), title: clockTooltip(header.createdAt) }, formatClock(header.createdAt)));
    }
    if (header.cwd) fact('Working directory', h('code', {}, String(header.cwd)));
    if (header.parentSession) {
      const seq = (header.seedLength ?? 0) - 1;
      const href = `/s/${encodeURIComponent(header.parentSession)}/log?seq=${Math.max(0, seq)}`;
      fact('Parent', h('a', { href, 'data-route': '' }, `${header.parentSession} at seq ${seq}`));
      fact('seedLength', String(header.seedLength ?? 0));
    }
    fact('Events', String(this.events.length));
    fact('State', this.live ? 'live' : 'cold');
    if (!this.live) fact('Repair', h('span', { 'data-kind': 'repair' }, repairPreview(this.repair)));
    this.facts.replaceChildren(...facts);
  }

  // --- lanes ---

  scheduleLanes() {
    if (this.lanesFrame) return;
    this.lanesFrame = requestAnimationFrame(() => {
      this.lanesFrame = 0;
      this.renderLanes();
    });
  }

  position(seq) {
    const last = Math.max(1, this.events.length - 1);
    return `${(seq / last) * 100}%`;
  }

  mark(seq, label, className, endSeq = null) {
    const button = h('button', { type: 'button', class: `mark ${className}`, 'data-seq': seq, 'aria-label': label, title: label, tabindex: '-1' });
    button.style.left = this.position(seq);
    if (endSeq !== null) {
      const last = Math.max(1, this.events.length - 1);
      button.style.width = `max(4px, ${((endSeq - seq) / last) * 100}%)`;
      button.classList.add('span');
    }
    button.addEventListener('click', () => this.selectSeq(seq));
    return button;
  }

  lane(name, tracks) {
    const group = h('div', { class: 'lane', role: 'group', 'aria-label': name }, h('div', { class: 'lane-name' }, name));
    const body = h('div', { class: 'lane-body' });
    for (const track of tracks) body.append(track);
    group.append(body);
    // One tab stop per lane; Left/Right move between its marks.
    const marks = Array.from(group.querySelectorAll('.mark'));
    if (marks.length > 0) marks[0].tabIndex = 0;
    group.addEventListener('keydown', (event) => {
      if (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight') return;
      const index = marks.indexOf(document.activeElement);
      if (index < 0) return;
      event.preventDefault();
      const next = marks[Math.min(marks.length - 1, Math.max(0, index + (event.key === 'ArrowRight' ? 1 : -1)))];
      marks[index].tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    });
    return group;
  }

  track(label, marks) {
    return h('div', { class: 'track' }, label ? h('span', { class: 'track-name' }, label) : null, ...marks);
  }

  renderLanes() {
    const events = this.events;
    const lanes = [];

    const turns = turnSpans(events).map((span) => {
      const reason = span.reason ?? 'open';
      const end = span.endSeq ?? events.length - 1;
      return this.mark(span.startSeq, `Turn ${span.turn}: seq ${span.startSeq}–${end}, ${reason}`, `reason-${reason}`, end);
    });
    lanes.push(this.lane('Turns', [this.track('', turns)]));

    const reminders = reminderLifecycles(events).map((life) => {
      const created = life.marks.find((m) => m.op === 'create');
      const marks = life.marks.map((m) => {
        let label = `${life.id} ${m.op} at seq ${m.seq}`;
        if (m.scheduledAt) {
          const at = Date.parse(m.scheduledAt);
          label += ` · scheduledAt ${m.scheduledAt} (UTC) · ${formatClock(at)} local (${displayZone()})`;
        }
        if (m.acceptedAt) label += ` · acceptedAt ${m.acceptedAt}`;
        return this.mark(m.seq, label, `op-${m.op}`);
      });
      return this.track(created?.prompt ? `${life.id} · ${created.prompt}` : life.id, marks);
    });
    lanes.push(this.lane('Reminders', reminders.length ? reminders : [this.track('none', [])]));

    const readings = readingMarks(events).map((m) => this.mark(m.seq, `Time reading at seq ${m.seq}: ${m.label}`, `reading-${m.label === 'mixed' || m.label === 'unavailable' ? m.label : 'zone'}`));
    lanes.push(this.lane('Time readings', [this.track('', readings)]));

    let lives = [];
    try {
      lives = inboxLifecycles(events, this.header?.seedLength ?? 0);
    } catch (error) {
      lanes.push(h('p', { class: 'lane-error' }, `Inbox: ${error.message}`));
    }
    const inbox = lives.map((life) => {
      const end = life.endSeq ?? events.length - 1;
      const outcome = life.endSeq === null ? 'queued' : life.canceled ? 'canceled' : 'claimed';
      return this.mark(life.receiptSeq, `${life.target}: ${life.text} · seq ${life.receiptSeq}–${end} · ${outcome}`, `inbox-${outcome}`, end);
    });
    lanes.push(this.lane('Inbox', [this.track('', inbox)]));
    this.lanes.replaceChildren(...lanes);
  }

  // --- fork at a seq ---

  askFork() {
    if (this.atSeq === null) return;
    this.dialog.seq.textContent = String(this.atSeq);
    this.dialog.input.value = '';
    this.dialog.element.showModal();
    this.dialog.input.focus();
  }

  async fork() {
    const boundarySeq = this.atSeq;
    const childSessionId = this.dialog.input.value.trim();
    this.dialog.element.close();
    const params = { sessionId: this.sessionId, boundarySeq };
    if (childSessionId !== '') params.childSessionId = childSessionId;
    this.notice.replaceChildren();
    try {
      const result = await this.rpc.call('session/fork', params);
      const child = result.sessionId;
      this.notice.replaceChildren(
        h('p', {}, `Forked at seq ${boundarySeq}: `, h('a', { href: `/s/${encodeURIComponent(child)}`, 'data-route': '', 'data-session-id': child }, child), ' (', h('a', { href: `/s/${encodeURIComponent(child)}/log`, 'data-route': '' }, 'its log'), ')'),
      );
    } catch (error) {
      if (error instanceof ConnectionLost) this.notice.textContent = 'Connection lost; try again.';
      else if (error instanceof RpcError) this.notice.textContent = errorLine(error);
      else throw error;
    }
  }
}
