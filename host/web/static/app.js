// Boot, sign-in, routing and wiring of the page (web §4.3, web §6.1, web §6.10); section numbers
// refer to docs/web.md.

import { ChatView, bindNotifyToggle } from './chat.js';
import { badgedTitle, isSessionId } from './format.js';
import { LogView } from './log.js';
import { h, setExpanded } from './render.js';
import { RpcClient } from './rpc.js';

const NOT_SIGNED_IN =
  'This page is not signed in to turnlog web. Open the link that turnlog web printed in its terminal.';
const UPDATED = 'turnlog web was updated; reload this page';
const BUG = 'Something went wrong in this page; reload it.';

// --- sign-in (web §4.3): take the token out of the URL before anything else runs ---

function takeToken() {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (match === null) return null;
  history.replaceState(history.state, '', location.pathname + location.search);
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}

const launchToken = takeToken();

async function signIn(token) {
  if (token === null) return;
  try {
    await fetch('/auth', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    // unreachable now: the connection loop reports it
  }
}

// --- metrics (web §9): only with ?metrics=1 ---

function createMetrics(enabled) {
  if (!enabled) {
    return { mark() {}, markPainted() {}, painted() {}, deltasPainted() {} };
  }
  const store = { marks: [], events: [], deltas: [] };
  window.__turnlogMetrics = store;
  const afterPaint = (fn) => requestAnimationFrame(() => setTimeout(fn, 0));
  return {
    mark(name, detail = {}) {
      store.marks.push({ name, at: performance.now(), wall: Date.now(), ...detail });
    },
    painted(sessionId, events) {
      afterPaint(() => {
        const wall = Date.now();
        for (const event of events) store.events.push({ sessionId, seq: event.seq, type: event.type, time: event.time, painted: wall });
      });
    },
    /** A mark taken once the next animation frame has painted what was just rendered. */
    markPainted(name, detail = {}) {
      afterPaint(() => this.mark(name, detail));
    },
    deltasPainted(received) {
      afterPaint(() => {
        const wall = Date.now();
        for (const at of received) store.deltas.push({ received: at, painted: wall });
      });
    },
  };
}

// --- the page ---

const $ = (id) => document.getElementById(id);

class App {
  constructor() {
    this.metrics = createMetrics(new URLSearchParams(location.search).get('metrics') === '1');
    this.metrics.mark('boot');
    this.version = document.querySelector('meta[name="turnlog-version"]')?.content ?? null;
    this.baseTitle = document.title;
    this.badged = false;
    this.view = null;
    this.rpc = new RpcClient({
      url: `ws://${location.host}/rpc`,
      onNotification: (method, params) => this.notification(method, params),
      onState: (state, retryAt) => this.connectionState(state, retryAt),
      onConnected: (info) => this.connected(info),
    });
    this.chat = new ChatView({
      rpc: this.rpc,
      metrics: this.metrics,
      navigate: (path) => this.navigate(path),
      announce: (text) => this.announce(text),
      setTitle: (title) => this.setTitle(title),
      badge: () => this.setBadge(true),
      notice: (text) => this.banner('notice', text),
      elements: {
        conversation: $('conversation'),
        notices: $('chat-notices'),
        queue: $('queue'),
        composer: $('composer'),
        input: $('composer-input'),
        send: $('send'),
        stop: $('stop'),
        composerError: $('composer-error'),
        sessionLabel: $('session-label'),
        runState: $('run-state'),
        chip: $('reminder-chip'),
        chipPanel: $('reminder-panel'),
        chatLink: $('link-chat'),
        logLink: $('link-log'),
        headerFork: $('header-fork'),
        newSession: $('new-session'),
        sessionList: $('session-list'),
        unreadable: $('unreadable'),
        unreadableList: $('unreadable-list'),
        switcher: $('switcher'),
        switcherInput: $('switcher-input'),
        switcherList: $('switcher-list'),
        switcherEmpty: $('switcher-empty'),
        openSwitcher: $('open-switcher'),
      },
    });
    this.log = new LogView({
      rpc: this.rpc,
      root: $('log-view'),
      metrics: this.metrics,
      sessionInfo: (sessionId) => this.chat.sessions.info(sessionId),
      forkDialog: {
        element: $('fork-dialog'),
        form: $('fork-form'),
        input: $('fork-child'),
        seq: $('fork-seq'),
        cancel: $('fork-cancel'),
      },
    });
    bindNotifyToggle($('notify-toggle'));
    this.bindGlobal();
  }

  async start() {
    await signIn(launchToken);
    // The page shows its route (drafts included) at once; views load when the connection opens.
    this.route();
    this.rpc.start();
  }

  // --- connection ---

  connectionState(state, retryAt) {
    clearInterval(this.countdown);
    const line = $('connection-status');
    if (state === 'connected') {
      line.textContent = 'Connected';
      this.clearBanner('not-signed-in');
      return;
    }
    if (this.started) {
      this.chat.disconnected();
    }
    if (state === 'not-signed-in') {
      line.textContent = 'Not signed in';
      this.banner('not-signed-in', NOT_SIGNED_IN);
      return;
    }
    if (state === 'waiting') {
      const tick = () => {
        const seconds = Math.floor((retryAt - Date.now()) / 1000);
        line.textContent = seconds >= 1 ? `Reconnecting in ${seconds} s…` : 'Reconnecting…';
      };
      tick();
      this.countdown = setInterval(tick, 250);
      return;
    }
    line.textContent = this.started ? 'Reconnecting…' : 'Connecting…';
  }

  async connected({ first, sameInstance, version }) {
    this.metrics.mark('connected');
    if (this.version !== null && version !== undefined && version !== this.version) this.banner('updated', UPDATED);
    this.started = true;
    const same = !first && sameInstance;
    this.chat.connectedAgain({ sameInstance: same });
    this.log.connectedAgain({ sameInstance: same });
  }

  notification(method, params) {
    const sessionId = params?.sessionId;
    if (method === 'session.event') {
      this.chat.event(sessionId, params.event);
      this.log.event(sessionId, params.event);
      if (this.chat.sessions.known(sessionId)) this.chat.sessions.markLive(sessionId);
      else this.chat.sessions.refreshSoon();
    } else if (method === 'session.status') {
      this.chat.status(sessionId, params.status);
      if (!this.chat.sessions.known(sessionId)) this.chat.sessions.refreshSoon();
    } else if (method === 'session.delta') {
      this.chat.delta(sessionId, params);
    } else if (method === 'subagent.started') {
      this.chat.sessions.refreshSoon();
    }
  }

  // --- routing (web §6.1, web §6.7) ---

  navigate(path, { replace = false } = {}) {
    if (replace) history.replaceState(null, '', path);
    else if (path !== location.pathname + location.search) history.pushState(null, '', path);
    if (window.matchMedia('(max-width: 900px)').matches) this.toggleNav(false);
    this.route();
  }

  route() {
    const path = location.pathname;
    if (path === '/' || path === '') {
      const last = this.chat.lastViewed();
      if (last !== null && isSessionId(last)) this.navigate(`/s/${encodeURIComponent(last)}`, { replace: true });
      else this.chat.newSession({ replace: true });
      return;
    }
    const match = /^\/s\/([^/]+)(\/log)?\/?$/.exec(path);
    let sessionId = null;
    if (match !== null) {
      try {
        sessionId = decodeURIComponent(match[1]);
      } catch {
        sessionId = match[1];
      }
    }
    if (match === null || !isSessionId(sessionId)) {
      this.showMessage(match === null ? `Nothing here: ${path}` : `Not a session id: ${sessionId}`);
      return;
    }
    if (match[2]) {
      const raw = new URLSearchParams(location.search).get('seq');
      const seq = raw !== null && /^\d+$/.test(raw) ? Number(raw) : null;
      this.show('log');
      this.setLinks(sessionId);
      this.chat.sessions.select(sessionId);
      this.setTitle(`${sessionId} · log · turnlog`);
      this.log.open(sessionId, seq);
    } else {
      this.show('chat');
      this.chat.open(sessionId);
    }
  }

  setLinks(sessionId) {
    $('link-chat').href = `/s/${encodeURIComponent(sessionId)}`;
    $('link-log').href = `/s/${encodeURIComponent(sessionId)}/log`;
    $('session-label').textContent = this.chat.sessions.label(sessionId) ?? sessionId;
  }

  show(view) {
    this.view = view;
    this.chat.visible = view === 'chat';
    $('chat-view').hidden = view !== 'chat';
    $('log-view').hidden = view !== 'log';
    $('message-view').hidden = view !== 'message';
    for (const [id, name] of [['link-chat', 'chat'], ['link-log', 'log']]) {
      if (view === name) $(id).setAttribute('aria-current', 'page');
      else $(id).removeAttribute('aria-current');
    }
    if (view !== 'chat') {
      for (const id of ['run-state', 'reminder-chip', 'reminder-panel', 'header-fork', 'stop']) $(id).hidden = true;
    }
  }

  showMessage(text) {
    this.show('message');
    $('message-view').replaceChildren(h('p', { class: 'route-message' }, text));
    this.setTitle('turnlog');
  }

  // --- page chrome ---

  setTitle(title) {
    this.baseTitle = title;
    document.title = badgedTitle(title, this.badged);
  }

  setBadge(badged) {
    this.badged = badged;
    document.title = badgedTitle(this.baseTitle, badged);
  }

  announce(text) {
    const region = $('announcer');
    region.textContent = '';
    // A new text node after clearing makes screen readers announce a repeated message too.
    requestAnimationFrame(() => {
      region.textContent = text;
    });
  }

  banner(kind, text) {
    const banners = $('banners');
    let banner = banners.querySelector(`[data-kind="${kind}"]`);
    if (banner === null) {
      banner = h('div', { class: `banner banner-${kind}`, 'data-kind': kind });
      banners.append(banner);
    }
    banner.textContent = text;
  }

  clearBanner(kind) {
    $('banners').querySelector(`[data-kind="${kind}"]`)?.remove();
  }

  bindGlobal() {
    document.addEventListener('click', (event) => {
      const link = event.target.closest('a[data-route], a#link-chat, a#link-log, #session-list a');
      if (link === null || event.defaultPrevented || event.button !== 0) return;
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      const url = new URL(link.href, location.href);
      if (url.origin !== location.origin) return;
      event.preventDefault();
      this.navigate(url.pathname + url.search);
    });
    window.addEventListener('popstate', () => this.route());
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') this.setBadge(false);
    });
    document.addEventListener('keydown', (event) => {
      if ((event.ctrlKey || event.metaKey) && !event.altKey && (event.key === 'k' || event.key === 'K')) {
        event.preventDefault();
        this.chat.sessions.openSwitcher();
      } else if (event.key === 'Escape' && !document.querySelector('dialog[open]')) {
        this.closeDisclosure();
      }
    });
    $('nav-toggle').addEventListener('click', () => this.toggleNav($('nav-toggle').getAttribute('aria-expanded') !== 'true'));
    window.addEventListener('error', (event) => this.bug(event.error ?? event.message));
    window.addEventListener('unhandledrejection', (event) => this.bug(event.reason));
  }

  // Escape closes the disclosure that holds the focus (or whose toggle has it), else the chip's
  // panel, else the sessions list opened over the page on a narrow screen.
  closeDisclosure() {
    const active = document.activeElement;
    const holder = active?.closest?.('.disclosure');
    const toggle = holder?.querySelector(':scope > .disclosure-toggle');
    if (toggle && toggle.getAttribute('aria-expanded') === 'true') {
      setExpanded(toggle, false);
      toggle.focus();
      return;
    }
    const chip = $('reminder-chip');
    if (chip.getAttribute('aria-expanded') === 'true') {
      chip.setAttribute('aria-expanded', 'false');
      $('reminder-panel').hidden = true;
      chip.focus();
      return;
    }
    if ($('nav-toggle').getAttribute('aria-expanded') === 'true') {
      this.toggleNav(false);
      $('nav-toggle').focus();
    }
  }

  toggleNav(open) {
    $('nav-toggle').setAttribute('aria-expanded', String(open));
    $('sessions').classList.toggle('open', open);
  }

  bug(error) {
    console.error('turnlog web: page error', error);
    this.banner('bug', BUG);
  }
}

new App().start();
