// DOM building of the page: the Markdown subset (web §4.5, web §6.3) and the conversation's rows (web §6.3).
// Untrusted text only ever becomes text nodes or attribute values set through the DOM; nothing
// here parses HTML. Functions build detached nodes and never touch the document's tree.

import {
  UNFINISHED_TEXT,
  clockTooltip,
  contextLabel,
  cut,
  forkDivider,
  formatClock,
  isoInstant,
  messageText,
  promptText,
  ranFor,
  readingLabel,
  reminderLabel,
  retryText,
  turnEndText,
} from './format.js';

/** `h('p', {class: 'x'}, 'text', node)`: an element with attributes and children (strings as text). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return element;
}

// --- Markdown -------------------------------------------------------------------------------------

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/** The absolute URL of an allowed link target (`http:`, `https:`, `mailto:`), else null (web §4.5). */
export function safeHref(target) {
  if (typeof target !== 'string' || /[\s\u0000-\u001f\u007f]/.test(target)) return null;
  let url;
  try {
    url = new URL(target);
  } catch {
    return null; // relative or malformed
  }
  return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
}

function link(href, children) {
  const a = h('a', { href, target: '_blank', rel: 'noopener noreferrer' });
  a.append(...children);
  return a;
}

const PUNCTUATION = /[!-/:-@[-`{-~]/;

// Finds the `](target)` that closes a link label opened at `open` ('[' index), or null.
function linkAt(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i += 1) {
    const c = text[i];
    if (c === '\\') {
      i += 1;
    } else if (c === '[') {
      depth += 1;
    } else if (c === ']') {
      depth -= 1;
      if (depth === 0) {
        if (text[i + 1] !== '(') return null;
        const match = /^\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(text.slice(i + 1));
        if (match === null) return null;
        const target = match[1].startsWith('<') ? match[1].slice(1, -1) : match[1];
        return { label: text.slice(open + 1, i), target, end: i + 1 + match[0].length };
      }
    }
  }
  return null;
}

const BARE_URL = /^(?:https?:\/\/|mailto:)[^\s<>]+/;

/** Inline Markdown to nodes: code spans, emphasis, links (safe targets only), images as text. */
export function renderInline(text) {
  const nodes = [];
  let plain = '';
  const flush = () => {
    if (plain !== '') nodes.push(document.createTextNode(plain));
    plain = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && PUNCTUATION.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
    } else if (c === '\\' && text[i + 1] === '\n') {
      flush();
      nodes.push(h('br'));
      i += 2;
    } else if (c === '\n') {
      flush();
      nodes.push(h('br'));
      i += 1;
    } else if (c === '`') {
      const run = /^`+/.exec(text.slice(i))[0];
      const end = closingRun(text, i + run.length, run.length);
      if (end === -1) {
        plain += run;
        i += run.length;
      } else {
        let code = text.slice(i + run.length, end).replace(/\n/g, ' ');
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim() !== '') code = code.slice(1, -1);
        flush();
        nodes.push(h('code', {}, code));
        i = end + run.length;
      }
    } else if (c === '!' && text[i + 1] === '[') {
      const found = linkAt(text, i + 1);
      if (found === null) {
        plain += c;
        i += 1;
      } else {
        plain += text.slice(i, found.end); // images render as their own source text (web §4.5)
        i = found.end;
      }
    } else if (c === '[') {
      const found = linkAt(text, i);
      const href = found && safeHref(found.target);
      if (found === null) {
        plain += c;
        i += 1;
      } else if (href === null) {
        plain += text.slice(i, found.end); // a refused target stays visible as text
        i = found.end;
      } else {
        flush();
        nodes.push(link(href, renderInline(found.label)));
        i = found.end;
      }
    } else if (c === '<' && /^<(?:https?:\/\/|mailto:)[^\s<>]*>/.test(text.slice(i))) {
      const inner = /^<([^\s<>]*)>/.exec(text.slice(i))[1];
      const href = safeHref(inner);
      if (href === null) {
        plain += `<${inner}>`;
      } else {
        flush();
        nodes.push(link(href, [document.createTextNode(inner)]));
      }
      i += inner.length + 2;
    } else if ((c === 'h' || c === 'm') && (i === 0 || /[\s(]/.test(text[i - 1])) && BARE_URL.test(text.slice(i))) {
      let url = BARE_URL.exec(text.slice(i))[0];
      url = url.replace(/[.,:;!?'")\]]+$/, '');
      const href = safeHref(url);
      if (href === null || url === 'mailto:') {
        plain += url || c;
        i += Math.max(1, url.length);
      } else {
        flush();
        nodes.push(link(href, [document.createTextNode(url)]));
        i += url.length;
      }
    } else if (c === '*' || c === '_') {
      const emphasis = emphasisAt(text, i);
      if (emphasis === null) {
        const run = c === '*' ? /^\*+/.exec(text.slice(i))[0] : /^_+/.exec(text.slice(i))[0];
        plain += run;
        i += run.length;
      } else {
        flush();
        const element = h(emphasis.strong ? 'strong' : 'em');
        element.append(...renderInline(emphasis.inner));
        nodes.push(element);
        i = emphasis.end;
      }
    } else {
      plain += c;
      i += 1;
    }
  }
  flush();
  return nodes;
}

// The index of the next run of exactly `size` backticks at or after `from`, or -1.
function closingRun(text, from, size) {
  let j = from;
  for (;;) {
    const k = text.indexOf('`', j);
    if (k === -1) return -1;
    const length = /^`+/.exec(text.slice(k))[0].length;
    if (length === size) return k;
    j = k + length;
  }
}

function emphasisAt(text, i) {
  const c = text[i];
  const word = /[\p{L}\p{N}]/u;
  if (c === '_' && i > 0 && word.test(text[i - 1])) return null; // snake_case stays as it is
  for (const size of text.startsWith(c.repeat(2), i) ? [2, 1] : [1]) {
    const delimiter = c.repeat(size);
    const start = i + size;
    if (start >= text.length || /\s/.test(text[start])) continue;
    let close = text.indexOf(delimiter, start + 1);
    while (close !== -1) {
      const before = text[close - 1];
      const after = text[close + size];
      const flanking = !/\s/.test(before) && before !== '\\';
      const single = size === 2 || text[close + 1] !== c;
      const intraword = c === '_' && after !== undefined && word.test(after);
      if (flanking && single && !intraword) {
        return { strong: size === 2, inner: text.slice(start, close), end: close + size };
      }
      close = text.indexOf(delimiter, close + 1);
    }
  }
  return null;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+)(.*)$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) || ITEM.test(line) || RULE.test(line);
}

/**
 * The Markdown subset of web §6.3 as a fragment: paragraphs, headings, emphasis, inline and fenced code
 * (each fence with a `Copy` button), lists, block quotes, rules and links (web §4.5). Raw HTML is text.
 */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  fragment.append(...renderBlocks(String(text).replace(/\r\n?/g, '\n').split('\n')));
  return fragment;
}

function renderBlocks(lines) {
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i += 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1];
      const body = [];
      i += 1;
      while (i < lines.length && !new RegExp(`^ {0,3}${marker[0]}{${marker.length},}\\s*$`).test(lines[i])) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1; // the closing fence (or the end)
      blocks.push(codeBlock(body.join('\n'), fence[2]));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const element = h(`h${heading[1].length}`);
      element.append(...renderInline(heading[2] ?? ''));
      blocks.push(element);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push(h('hr'));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && QUOTE.test(lines[i])) {
        inner.push(QUOTE.exec(lines[i])[1]);
        i += 1;
      }
      const quote = h('blockquote');
      quote.append(...renderBlocks(inner));
      blocks.push(quote);
      continue;
    }
    if (ITEM.test(line)) {
      const { element, next } = renderList(lines, i);
      blocks.push(element);
      i = next;
      continue;
    }
    const paragraph = [];
    while (i < lines.length && lines[i].trim() !== '' && !(paragraph.length > 0 && startsBlock(lines[i]))) {
      paragraph.push(lines[i].trim());
      i += 1;
    }
    const p = h('p');
    p.append(...renderInline(paragraph.join('\n')));
    blocks.push(p);
  }
  return blocks;
}

function renderList(lines, start) {
  const first = ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const list = h(ordered ? 'ol' : 'ul');
  if (ordered && Number.parseInt(first[2], 10) !== 1) list.setAttribute('start', String(Number.parseInt(first[2], 10)));
  let i = start;
  while (i < lines.length) {
    const item = ITEM.exec(lines[i]);
    if (item === null || /\d/.test(item[2]) !== ordered) break;
    const indent = item[1].length + item[2].length + Math.min(item[3].length, 4);
    const body = [item[4]];
    i += 1;
    while (i < lines.length) {
      const next = lines[i];
      if (next.trim() === '') {
        // A blank line continues the item only when indented content follows it.
        const after = lines[i + 1];
        if (after !== undefined && after.trim() !== '' && leadingSpaces(after) >= indent) {
          body.push('');
          i += 1;
          continue;
        }
        break;
      }
      if (leadingSpaces(next) >= indent) {
        body.push(next.slice(indent));
      } else if (!startsBlock(next)) {
        body.push(next.trim()); // a lazy continuation of the item's paragraph
      } else {
        break;
      }
      i += 1;
    }
    const li = h('li');
    const blocks = renderBlocks(body);
    // A one-paragraph item reads as plain inline content, as in a tight list.
    if (blocks.length === 1 && blocks[0].tagName === 'P') li.append(...blocks[0].childNodes);
    else li.append(...blocks);
    list.append(li);
    if (i < lines.length && lines[i].trim() === '' && ITEM.test(lines[i + 1] ?? '')) i += 1;
  }
  return { element: list, next: i };
}

function leadingSpaces(line) {
  return /^ */.exec(line)[0].length;
}

function codeBlock(code, language) {
  const pre = h('pre', {}, h('code', language ? { 'data-language': language } : {}, code));
  return h('div', { class: 'code-block' }, pre, copyButton(() => code));
}

// --- small controls ---------------------------------------------------------------------------------

/** A `Copy` button putting `text()` on the clipboard; its accessible name stays `Copy`. */
export function copyButton(text, label = 'Copy') {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': label }, label);
  button.addEventListener('click', () => {
    navigator.clipboard.writeText(text()).then(
      () => {
        button.dataset.copied = 'true';
        setTimeout(() => delete button.dataset.copied, 1500);
      },
      () => {
        button.title = 'The browser refused the clipboard';
      },
    );
  });
  return button;
}

let disclosureCount = 0;

/**
 * A disclosure (web §6.11): a `<button aria-expanded="false">` with `label` that shows and hides
 * `content`, closed at first. Returns the wrapper; `Escape` inside it closes it (app.js).
 */
export function disclosure(label, content, { className = '' } = {}) {
  disclosureCount += 1;
  const id = `disclosure-${disclosureCount}`;
  const button = h('button', { type: 'button', class: 'disclosure-toggle', 'aria-expanded': 'false', 'aria-controls': id });
  button.append(h('span', { class: 'chevron', 'aria-hidden': 'true' }), ...(Array.isArray(label) ? label : [label]));
  const panel = h('div', { id, class: 'disclosure-panel', hidden: true }, content);
  button.addEventListener('click', () => setExpanded(button, button.getAttribute('aria-expanded') !== 'true'));
  return h('div', { class: `disclosure ${className}`.trim() }, button, panel);
}

/** Opens or closes a disclosure by its toggle button. */
export function setExpanded(button, expanded) {
  button.setAttribute('aria-expanded', String(expanded));
  const panel = document.getElementById(button.getAttribute('aria-controls'));
  if (panel) panel.hidden = !expanded;
}

/** `<time datetime>` showing the web §6.3 clock of `ms`, its tooltip per web §6.2. */
export function clock(ms, { now, timeZone, prompt = false, clientTimeZone } = {}) {
  const element = h('time', { datetime: isoInstant(ms), 'data-ms': ms }, formatClock(ms, { now, timeZone }));
  element.title = clockTooltip(ms, { timeZone, prompt, clientTimeZone });
  if (prompt) element.dataset.prompt = clientTimeZone ?? '';
  return element;
}

/** Re-renders every clock under `root` for a new `now` (the next local midnight, web §6.3). */
export function refreshClocks(root, { now = Date.now(), timeZone } = {}) {
  for (const element of root.querySelectorAll('time[data-ms]')) {
    const ms = Number(element.dataset.ms);
    element.textContent = formatClock(ms, { now, timeZone });
    const prompt = element.dataset.prompt !== undefined;
    element.title = clockTooltip(ms, { timeZone, prompt, clientTimeZone: element.dataset.prompt || undefined });
  }
}

function pretty(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

// --- conversation rows (web §6.3) ---------------------------------------------------------------------

function row(kind, event, ...children) {
  const attributes = { class: `row row-${kind}`, 'data-kind': kind };
  if (event) {
    attributes['data-seq'] = event.seq;
    if (Number.isInteger(event.data?.turn)) attributes['data-turn'] = event.data.turn;
    if (Number.isInteger(event.data?.step)) attributes['data-step'] = event.data.step;
  }
  return h('div', attributes, ...children);
}

function plainText(text) {
  return h('div', { class: 'plain' }, text);
}

/** A prompt's bubble: its text (`[image]` for an image block), clock and `Copy`. */
export function userRow(event, { now, timeZone } = {}) {
  const text = promptText(event.data.content);
  const element = row(
    'user',
    event,
    h('div', { class: 'bubble' }, plainText(text)),
    h('div', { class: 'meta' }, clock(event.time, { now, timeZone, prompt: true, clientTimeZone: event.data.source?.clientTimeZone }), copyButton(() => text)),
  );
  if (typeof event.data.source?.rpcId === 'string') element.dataset.rpcId = event.data.source.rpcId;
  return element;
}

/** A prompt sent from this tab that turnlog has not acknowledged yet. */
export function pendingRow(text, rpcId) {
  const element = row('user', null, h('div', { class: 'bubble' }, plainText(text)), h('div', { class: 'meta' }, 'Sending…'));
  element.dataset.pending = 'true';
  element.dataset.rpcId = rpcId;
  return element;
}

/** A time reading: `Time reading · <Zone>` (or mixed, or unavailable); expanded, the exact text. */
export function readingRow(event) {
  const text = messageText(event.data);
  return row('reading', event, disclosure(readingLabel(text), h('pre', { class: 'framed' }, text)));
}

/** A reminder follow-up: `⏰ Reminder: <prompt>` (a batch `⏰ <n> reminders: …`); expanded, the framed text. */
export function reminderRow(event) {
  const text = messageText(event.data);
  return row('reminder', event, disclosure(reminderLabel(text), h('pre', { class: 'framed' }, text)));
}

/** Any other user message: `Context · <plugin, or source kind>`; expanded, its text and source. */
export function contextRow(event) {
  const body = h('div', {}, h('pre', { class: 'framed' }, messageText(event.data)), h('pre', { class: 'framed' }, pretty(event.data.source)));
  return row('context', event, disclosure(contextLabel(event.data), body));
}

/** A reasoning block: a closed `Thinking` row summarised by its first line. */
export function thinkingRow(event, text) {
  const summary = text.split('\n').find((line) => line.trim() !== '') ?? '';
  return row('thinking', event, disclosure(['Thinking', ' ', h('span', { class: 'summary' }, summary.trim())], plainText(text)));
}

/** An assistant text block, as Markdown. */
export function assistantRow(event, text) {
  const element = row('assistant', event);
  element.append(renderMarkdown(text));
  return element;
}

/** A tool call's row: name, arguments cut to 80 characters and its state (`running` until a result). */
export function toolRow(event, call) {
  const state = h('span', { class: 'tool-state', 'data-state': 'running' }, 'running');
  const args = typeof call.arguments === 'string' ? call.arguments : '';
  const shortArgs = cut(args, 80);
  const result = h('pre', { class: 'framed tool-result' });
  const body = h('div', {}, h('pre', { class: 'framed' }, prettyArguments(args)), result);
  const label = [h('span', { class: 'tool-name' }, String(call.name ?? '')), ' ', h('span', { class: 'tool-args' }, shortArgs), ' ', state];
  const element = row('tool', event, disclosure(label, body));
  element.dataset.callId = String(call.id ?? '');
  return element;
}

function prettyArguments(args) {
  if (args === '') return '{}';
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/** Marks a tool row `done` or `failed` (failed: the result's first line) with the result text. */
export function settleToolRow(element, resultEvent) {
  const block = resultEvent.data?.message?.content?.[0] ?? {};
  const text = promptText(block.content);
  const failed = block.isError === true;
  const state = element.querySelector('.tool-state');
  state.dataset.state = failed ? 'failed' : 'done';
  state.textContent = failed ? `failed: ${text.split('\n')[0]}` : 'done';
  element.querySelector('.tool-result').textContent = text;
  element.dataset.resultSeq = resultEvent.seq;
}

/** `Retrying model request (<n>/<max>) after <code>: <message>`. */
export function retryRow(event) {
  return row('retry', event, plainText(retryText(event.data)));
}

/**
 * A turn's end. Completed: clock, `Ran for <duration>` (when the start is known), `Copy` (the
 * turn's last assistant text) and `Fork`; any other reason, its one line (web §6.3).
 */
export function turnEndRow(event, { startTime, lastText = '', onFork, now, timeZone } = {}) {
  const reason = event.data?.reason;
  const text = turnEndText(reason);
  const element = row('turn-end', event);
  element.dataset.reason = String(reason?.kind ?? '');
  if (text !== null) {
    element.append(plainText(text));
    return element;
  }
  const meta = h('div', { class: 'meta' }, clock(event.time, { now, timeZone }));
  if (Number.isFinite(startTime)) meta.append(h('span', { class: 'ran-for' }, ranFor(startTime, event.time)));
  meta.append(copyButton(() => lastText));
  if (onFork) {
    const fork = h('button', { type: 'button', class: 'fork' }, 'Fork');
    fork.addEventListener('click', () => onFork(event.seq, fork));
    meta.append(fork);
  }
  element.append(meta);
  return element;
}

/** The final turn of a cold session that has no `turn/end`. */
export function unfinishedRow() {
  return row('unfinished', null, plainText(UNFINISHED_TEXT));
}

/** The divider a fork child shows where its own events begin. */
export function dividerRow(event, header) {
  return row('divider', event, h('div', { class: 'divider-text' }, forkDivider(header)));
}

/** The provisional block that live deltas build for (turn, step) until its `assistant/message`. */
export function deltaRow(turn, step) {
  const element = row('delta', null, plainText(''));
  element.dataset.turn = turn;
  element.dataset.step = step;
  return element;
}

/**
 * Append streamed text to a provisional block (`deltaRow`). Each line goes in its own element,
 * keeping its line feed (which renders exactly as the one text would): a frame's layout then
 * redoes the last line only, not a text that grows with every delta (web §9 B3).
 */
export function appendDeltaText(element, text) {
  const body = element.firstChild;
  let line = body.lastElementChild;
  for (const piece of text.split(/(?<=\n)/)) {
    if (piece === '') continue;
    if (line === null || line.firstChild.data.endsWith('\n')) {
      line = h('div', { class: 'delta-line' }, '');
      body.append(line);
    }
    line.firstChild.appendData(piece);
  }
}
