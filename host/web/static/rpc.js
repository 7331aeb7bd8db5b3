// The page's JSON-RPC 2.0 client over the `/rpc` WebSocket (web §5, web §6.4, web §6.10): request ids
// from crypto.randomUUID(), pending requests, notifications, reconnect with backoff and the
// instance rule, and a per-session event feed that applies events in seq order.

/** `session/history`'s `beforeSeq` for the tail page (web §5.4). */
export const TAIL = Number.MAX_SAFE_INTEGER;

/** A request that turnlog answered with an error: `code`, `message` and `data` (`data.code`). */
export class RpcError extends Error {
  constructor(error) {
    super(typeof error?.message === 'string' ? error.message : 'turnlog answered with an error');
    this.name = 'RpcError';
    this.rpcCode = error?.code;
    this.data = error?.data && typeof error.data === 'object' ? error.data : {};
  }

  /** The stable `data.code` (`invalid-time-zone`, `session-busy`, …). */
  get code() {
    return typeof this.data.code === 'string' ? this.data.code : '';
  }
}

/** A request left unanswered because the connection closed (or was never open). */
export class ConnectionLost extends Error {
  constructor(method, id) {
    super('Connection lost; try again.');
    this.name = 'ConnectionLost';
    this.method = method;
    this.id = id;
  }
}

/**
 * How long to wait before reconnect attempt `attempt` (1-based) after a close (web §6.10): the first
 * attempt is immediate; later ones wait uniform(cap/2, cap) ms with cap = min(10 s, 0.5 s × 2^(attempt−1)).
 */
export function reconnectDelayMs(attempt, random = Math.random) {
  if (attempt <= 1) return 0;
  const cap = Math.min(10000, 500 * 2 ** (attempt - 1));
  return cap / 2 + random() * (cap / 2);
}

function visible() {
  return document.visibilityState !== 'hidden';
}

// Resolves after `ms`, or at once when a hidden document becomes visible again (web §6.10: while
// hidden, wait for visibility and then retry at once). Never resolves while hidden.
function pause(ms) {
  return new Promise((resolve) => {
    let timer = null;
    const done = () => {
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onChange);
      resolve();
    };
    const onChange = () => {
      if (visible()) done();
      else clearTimeout(timer);
    };
    document.addEventListener('visibilitychange', onChange);
    if (visible()) timer = setTimeout(done, ms);
  });
}

/**
 * The connection to turnlog web. `start()` connects and keeps reconnecting; `state` is one of
 * `connecting`, `connected`, `waiting` (with `retryAt`), `not-signed-in`.
 *
 * Callbacks: `onNotification(method, params)` for every notification, in arrival order;
 * `onState(state, retryAt)`; `onConnected({first, sameInstance, version, instance, root})` after each
 * successful `initialize`, before which no request of the page is sent.
 */
export class RpcClient {
  constructor({ url, onNotification, onState, onConnected }) {
    this.url = url;
    this.onNotification = onNotification;
    this.onState = onState;
    this.onConnected = onConnected;
    this.socket = null;
    this.ready = false;
    this.pending = new Map();
    this.instance = null;
    this.connections = 0;
    this.state = 'connecting';
    this.retryAt = null;
  }

  /** True while requests can be sent (connected and initialized). */
  get connected() {
    return this.ready;
  }

  setState(state, retryAt = null) {
    this.state = state;
    this.retryAt = retryAt;
    this.onState(state, retryAt);
  }

  /** Connect, and reconnect after every close, until the page is found not signed in. */
  async start() {
    let attempt = 0;
    for (;;) {
      attempt += 1;
      const delay = reconnectDelayMs(attempt);
      if (delay > 0 || !visible()) {
        this.setState('waiting', Date.now() + delay);
        await pause(delay);
      }
      this.setState('connecting');
      const socket = await this.open();
      if (socket === null) {
        if (await this.signedOut()) {
          this.setState('not-signed-in');
          return;
        }
        continue;
      }
      // A connection that closes before initialize answered counts as a failed attempt.
      if (await this.serve(socket)) attempt = 0;
    }
  }

  async signedOut() {
    try {
      const answer = await fetch('/api/whoami', { credentials: 'same-origin', cache: 'no-store' });
      return answer.status === 401;
    } catch {
      return false; // the server is not reachable: keep trying
    }
  }

  open() {
    return new Promise((resolve) => {
      let socket;
      try {
        socket = new WebSocket(this.url);
      } catch {
        resolve(null);
        return;
      }
      const fail = () => {
        socket.onopen = socket.onerror = socket.onclose = null;
        resolve(null);
      };
      socket.onerror = fail;
      socket.onclose = fail;
      socket.onopen = () => {
        socket.onopen = socket.onerror = socket.onclose = null;
        resolve(socket);
      };
    });
  }

  // Runs one connection: initialize, report it, and resolve when it closes, with whether
  // initialize succeeded.
  serve(socket) {
    let initialized = false;
    return new Promise((resolve) => {
      this.socket = socket;
      socket.onmessage = (message) => this.receive(message.data);
      socket.onclose = () => {
        this.socket = null;
        this.ready = false;
        const lost = Array.from(this.pending.entries());
        this.pending.clear();
        for (const [id, { reject, method }] of lost) reject(new ConnectionLost(method, id));
        resolve(initialized);
      };
      this.send('initialize', { streamDeltas: true }).then(
        (result) => {
          const info = result?.turnlog ?? {};
          const first = this.connections === 0;
          const sameInstance = !first && typeof info.instance === 'string' && info.instance === this.instance;
          this.connections += 1;
          this.instance = info.instance ?? null;
          this.ready = true;
          initialized = true;
          this.setState('connected');
          this.onConnected({ first, sameInstance, version: info.version, instance: info.instance, root: info.root });
        },
        (error) => {
          if (!(error instanceof ConnectionLost)) {
            console.error('turnlog web: initialize failed', error);
            socket.close();
          }
        },
      );
    });
  }

  receive(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      console.error('turnlog web: a frame that is not JSON');
      return;
    }
    if (frame === null || typeof frame !== 'object') return;
    if (typeof frame.method === 'string') {
      this.onNotification(frame.method, frame.params ?? {});
      return;
    }
    const waiting = this.pending.get(frame.id);
    if (waiting === undefined) return;
    this.pending.delete(frame.id);
    if ('error' in frame) waiting.reject(new RpcError(frame.error));
    else waiting.resolve(frame.result);
  }

  send(method, params, id = crypto.randomUUID()) {
    const socket = this.socket;
    if (socket === null || socket.readyState !== WebSocket.OPEN) return Promise.reject(new ConnectionLost(method, id));
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /**
   * Send a request once connected; resolves with its result, rejects with {@link RpcError} or
   * {@link ConnectionLost}. `id` defaults to a fresh `crypto.randomUUID()`.
   */
  call(method, params = {}, id = crypto.randomUUID()) {
    if (!this.ready) return Promise.reject(new ConnectionLost(method, id));
    return this.send(method, params, id);
  }
}

/**
 * One session's events as `session.event` notifications and `session/history` pages deliver them
 * (web §6.4): applied in seq order, deduplicated by seq; a seq beyond the next expected one first
 * fetches the missing events, buffering notifications meanwhile. `onEvents(events)` receives each
 * contiguous run, ascending.
 */
export class SessionFeed {
  constructor(rpc, sessionId, onEvents) {
    this.rpc = rpc;
    this.sessionId = sessionId;
    this.onEvents = onEvents;
    this.nextSeq = null; // unknown until a page was loaded
    this.buffer = new Map();
    this.fetching = false;
    this.generation = 0;
  }

  /** Forget everything (the host restarted, or the session turned live): buffered events too. */
  reset() {
    this.nextSeq = null;
    this.buffer.clear();
    this.fetching = false;
    this.generation += 1;
  }

  /** The session has no file yet: its first event will be seq 0. */
  startEmpty() {
    this.nextSeq = 0;
    this.drain();
  }

  /** Load the tail page (`beforeSeq` max, `limit`); returns the history result. */
  async loadTail(limit) {
    const generation = this.generation;
    const result = await this.rpc.call('session/history', { sessionId: this.sessionId, beforeSeq: TAIL, limit });
    if (generation !== this.generation) return null;
    this.nextSeq = result.nextSeq;
    return result;
  }

  /**
   * Load every event from seq 0 in pages of `pageSize` through `onEvents` (the inspector, web §6.12);
   * resolves with the session header, or null when reset meanwhile.
   */
  async loadAll(pageSize) {
    this.nextSeq = 0;
    return this.follow(pageSize);
  }

  /** Older events, before `beforeSeq`, for scrolling back; not applied through `onEvents`. */
  async older(beforeSeq, limit) {
    return this.rpc.call('session/history', { sessionId: this.sessionId, beforeSeq, limit });
  }

  /** A `session.event` notification of this session. */
  push(event) {
    if (this.nextSeq !== null && event.seq < this.nextSeq) return;
    this.buffer.set(event.seq, event);
    this.drain();
  }

  take(events) {
    const run = [];
    for (const event of events) {
      if (event.seq === this.nextSeq) {
        run.push(event);
        this.nextSeq += 1;
      }
    }
    if (run.length > 0) this.onEvents(run);
    this.drain();
  }

  drain() {
    if (this.nextSeq === null) return;
    for (const seq of this.buffer.keys()) if (seq < this.nextSeq) this.buffer.delete(seq); // a page had them
    const run = [];
    while (this.buffer.has(this.nextSeq)) {
      run.push(this.buffer.get(this.nextSeq));
      this.buffer.delete(this.nextSeq);
      this.nextSeq += 1;
    }
    if (run.length > 0) this.onEvents(run);
    if (this.buffer.size > 0 && !this.fetching) this.catchUp();
  }

  /** Fetch from the next expected seq until done (a gap, or after a reconnect). */
  async catchUp() {
    if (this.fetching || this.nextSeq === null) return;
    try {
      await this.follow(1000);
    } catch (error) {
      // Lost: the reconnect catches up. Refused: the next notification tries again.
      if (!(error instanceof ConnectionLost || error instanceof RpcError)) throw error;
    }
  }

  // Pages from the next expected seq until done, applied through take(); no other fetch starts
  // meanwhile. Resolves with the header, or null when reset meanwhile.
  async follow(limit) {
    this.fetching = true;
    const generation = this.generation;
    let header = null;
    try {
      for (;;) {
        const params = { sessionId: this.sessionId, fromSeq: this.nextSeq, limit };
        const result = await this.rpc.call('session/history', params);
        if (generation !== this.generation) return null;
        header = result.header;
        this.take(result.events);
        if (result.done || result.events.length === 0) break;
      }
    } finally {
      if (generation === this.generation) this.fetching = false;
    }
    this.drain(); // notifications beyond what the pages held
    return header;
  }
}
