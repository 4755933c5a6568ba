'use strict';
// minfer's chat page (web/chat.html): conversations kept in this browser (localStorage), each
// with its own system prompt and sampling settings; replies streamed from /v1/chat/completions
// and rendered as markdown (web/markdown.js), reasoning and tool calls shown as such. The page
// talks to nothing but the server that served it, and the MCP servers the user adds
// (web/tools.js), whose tools it offers and whose calls it runs in a loop bounded by rounds.

const $ = (id) => document.getElementById(id);

// ---- storage ---------------------------------------------------------------------------------

const STORE_KEY = 'minfer.chat.conversations';  // localStorage: [conversation]
const API_KEY_KEY = 'minfer.chat.apiKey';  // localStorage: the bearer key, once asked for
const CURRENT_KEY = 'minfer.chat.current';  // sessionStorage: this tab's conversation id

// The sampling settings a conversation holds, by request field, and their inputs.
const SAMPLING = [
  ['temperature', 'temperature'], ['top_p', 'top-p'], ['top_k', 'top-k'], ['min_p', 'min-p'],
  ['repeat_penalty', 'repeat-penalty'], ['presence_penalty', 'presence-penalty'],
  ['frequency_penalty', 'frequency-penalty'], ['max_tokens', 'max-tokens'], ['seed', 'seed'],
];
const BASE_SETTINGS = {
  system: '', temperature: '0.8', top_p: '', top_k: '', min_p: '', repeat_penalty: '',
  presence_penalty: '', frequency_penalty: '', max_tokens: '1024', seed: '',
};

function readJson(storage, key, fallback) {
  try {
    const text = storage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch (e) {
    return fallback;
  }
}

// The saved conversations, dropping any that a bad write left unreadable.
function loadConversations() {
  const list = readJson(localStorage, STORE_KEY, []);
  if (!Array.isArray(list)) return [];
  return list.filter((c) => c && typeof c.id === 'string' && Array.isArray(c.messages));
}

let conversations = loadConversations();
let current = null;  // the conversation shown; in `conversations` once it has a message
let controller = null;  // the reply streaming now

function saveAll() {
  try {
    localStorage.setItem(STORE_KEY, JSON.stringify(conversations));
  } catch (e) {
    setStatus('Could not save the conversations: ' + e.message, true);
  }
}

// Saves `conv` (adding it to the list when new); `touch` moves it to the top of the list.
function persist(conv, touch = true) {
  if (!conversations.includes(conv)) conversations.unshift(conv);
  if (touch) conv.updated = Date.now();
  conversations.sort((a, b) => b.updated - a.updated);
  saveAll();
  renderList();
}

function makeId() {
  return Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 10);
}

// A new conversation; it starts with the sampling settings of `from` (not its system prompt).
function newConversation(from = null) {
  const settings = { ...BASE_SETTINGS, ...(from ? from.settings : {}), system: '' };
  return { id: makeId(), title: 'New chat', created: Date.now(), updated: Date.now(), settings, messages: [] };
}

function titleFrom(text) {
  const line = text.trim().split('\n')[0];
  return line.length > 40 ? line.slice(0, 40) + '\u2026' : line || 'New chat';
}

// ---- the API ---------------------------------------------------------------------------------

let keyPrompt = null;  // the open API key dialog: a promise of the key (null: cancelled)

function askApiKey(message) {
  if (keyPrompt) return keyPrompt;
  keyPrompt = new Promise((resolve) => {
    const dialog = $('key-dialog');
    $('key-message').textContent = message;
    $('key-input').value = '';
    dialog.addEventListener('close', () => {
      keyPrompt = null;
      const key = $('key-input').value.trim();
      resolve(dialog.returnValue === 'save' && key ? key : null);
    }, { once: true });
    dialog.returnValue = '';
    dialog.showModal();
  });
  return keyPrompt;
}

function showKeyState() {
  const key = localStorage.getItem(API_KEY_KEY);
  $('key-state').textContent = key ? 'kept in this browser, sent as a bearer token' :
    'none (asked for when the server wants one)';
  $('forget-key').disabled = !key;
}

// fetch() on this server with the API key; a 401 asks for the key (once kept, it is sent from
// then on) and tries again.
async function apiFetch(path, init = {}) {
  for (let attempt = 0; ; attempt++) {
    const key = localStorage.getItem(API_KEY_KEY);
    const headers = { ...(init.headers || {}) };
    if (key) headers.Authorization = 'Bearer ' + key;
    const res = await fetch(path, { ...init, headers });
    if (res.status !== 401 || attempt >= 3) return res;
    const asked = await askApiKey(key ? 'The server refused the API key; enter the right one.' :
      'This server needs an API key.');
    if (!asked) return res;
    localStorage.setItem(API_KEY_KEY, asked);
    showKeyState();
  }
}

async function errorMessage(res) {
  const body = await res.json().catch(() => ({}));
  return (body.error && body.error.message) || ('HTTP ' + res.status);
}

// The history as chat messages. An assistant's tool calls go with it only when every call has
// its tool message (a reply stopped mid-call, or imported half, is sent as its text alone), and a
// tool message only beside its call.
function historyMessages(list) {
  const answered = new Set(list.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
  const sent = new Set();
  const messages = [];
  for (const m of list) {
    if (m.error) continue;
    const calls = m.role === 'assistant' ? (m.tool_calls || []).filter(Boolean) : [];
    if (calls.length && calls.every((c) => answered.has(c.id))) {
      for (const c of calls) sent.add(c.id);
      messages.push({ role: 'assistant', content: m.content, tool_calls: calls.map((c) => ({
        id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } })) });
    } else if (m.role === 'tool') {
      if (sent.has(m.tool_call_id)) messages.push({ role: 'tool', tool_call_id: m.tool_call_id, content: m.content });
    } else if (m.role === 'user' || m.content) {
      messages.push({ role: m.role, content: m.content });
    }
  }
  return messages;
}

// The request for the conversation's next reply, with the enabled MCP tools.
function requestBody(conv) {
  const s = conv.settings;
  const messages = [];
  if (s.system && s.system.trim()) messages.push({ role: 'system', content: s.system });
  messages.push(...historyMessages(conv.messages));
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  const tools = mcpToolDefinitions();
  if (tools.length) body.tools = tools;
  for (const [field] of SAMPLING) {
    const v = s[field];
    if (v !== '' && v !== null && v !== undefined && !Number.isNaN(Number(v))) body[field] = Number(v);
  }
  return body;
}

// Calls onEvent with each SSE data event of the response, parsed.
async function readEvents(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const events = (buffer + decoder.decode(value, { stream: true })).split('\n\n');
    buffer = events.pop();  // an event not complete yet
    for (const event of events.map((e) => e.trim())) {
      if (event.startsWith('data: ') && event !== 'data: [DONE]') onEvent(JSON.parse(event.slice(6)));
    }
  }
}

// ---- one reply -------------------------------------------------------------------------------

// A streamed tool call delta merged into the message's calls (by index).
function mergeToolCall(calls, delta) {
  const i = typeof delta.index === 'number' ? delta.index : calls.length;
  if (!calls[i]) calls[i] = { id: '', type: 'function', function: { name: '', arguments: '' } };
  const call = calls[i];
  if (delta.id) call.id = delta.id;
  if (delta.function && delta.function.name) call.function.name += delta.function.name;
  if (delta.function && delta.function.arguments) call.function.arguments += delta.function.arguments;
}

// What the meter measured: tokens, tok/s, time to the first token, prompt and cached tokens.
function replyStats(meter, note) {
  const u = meter.usage;
  const now = meter.tEnd || performance.now();
  const secs = meter.tFirst ? (now - meter.tFirst) / 1000 : 0;
  const tokens = u ? u.completion_tokens : meter.tokens;
  const t = meter.timings;  // llama-server's, when a server sends them
  let rate = secs > 0 && tokens > 1 ? (tokens - 1) / secs : null;
  if (t && typeof t.predicted_per_second === 'number') rate = t.predicted_per_second;
  return {
    tokens,
    rate,
    first: meter.tFirst ? (meter.tFirst - meter.t0) / 1000 : null,
    prompt: u ? u.prompt_tokens : null,
    cached: u && u.prompt_tokens_details ? u.prompt_tokens_details.cached_tokens : null,
    seed: u && u.seed !== undefined ? u.seed : null,
    note,
  };
}

function statsText(st) {
  let s = st.tokens + ' tokens, ' + (st.rate === null ? '-' : st.rate.toFixed(1)) + ' tok/s';
  if (st.first !== null) s += ', first token ' + st.first.toFixed(2) + ' s';
  if (st.prompt !== null) s += ', prompt ' + st.prompt + ' tokens';
  if (st.cached !== null && st.cached !== undefined) s += ', ' + st.cached + ' cached';
  if (st.seed !== null) s += ', seed ' + st.seed;
  return s + (st.note ? ' - ' + st.note : '');
}

// Applies one stream chunk to the message and the meter.
function applyChunk(chunk, msg, meter) {
  if (chunk.error) throw new Error(chunk.error.message || JSON.stringify(chunk.error));
  if (chunk.usage) meter.usage = chunk.usage;
  if (chunk.timings) meter.timings = chunk.timings;
  let counted = false;
  for (const c of chunk.choices || []) {
    const d = c.delta || {};
    if (d.reasoning_content) msg.reasoning += d.reasoning_content;
    if (d.content) msg.content += d.content;
    for (const call of d.tool_calls || []) mergeToolCall(msg.tool_calls, call);
    if (d.reasoning_content || d.content || d.tool_calls) counted = true;
    if (c.finish_reason) meter.finish = c.finish_reason;
  }
  if (counted) {
    if (!meter.tFirst) meter.tFirst = performance.now();
    meter.tokens += 1;
  }
}

// Streams the conversation's next reply into a new assistant message; returns it, its view, and
// the tools the request offered.
async function generate(conv, signal) {
  const body = requestBody(conv);
  const msg = { role: 'assistant', content: '', reasoning: '', tool_calls: [], stats: null };
  conv.messages.push(msg);
  const view = addTurn(msg, conv.messages.length - 1);
  const meter = { t0: performance.now(), tFirst: 0, tEnd: 0, tokens: 0, usage: null, timings: null, finish: null };
  let note = '';
  try {
    const res = await apiFetch('v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal,
    });
    if (!res.ok) throw new Error(await errorMessage(res));
    await readEvents(res, (chunk) => {
      applyChunk(chunk, msg, meter);
      scheduleRender(msg, view);
      view.stats.textContent = statsText(replyStats(meter, ''));
    });
    if (meter.finish === 'length') note = 'max tokens reached';
  } catch (e) {
    if (e.name === 'AbortError') {
      note = 'stopped';
      view.div.dataset.stopped = 'true';
    } else {
      msg.error = e.message;
    }
  } finally {
    meter.tEnd = performance.now();
    msg.stats = replyStats(meter, note);
    for (const call of msg.tool_calls) if (call && !call.id) call.id = 'call_' + makeId();  // its result names it
    renderAssistant(msg, view, false);
    if (conv === current) $('log').scrollTop = $('log').scrollHeight;
    view.div.dataset.done = 'true';
    if (conversations.includes(conv)) persist(conv);
  }
  return { msg, view, offered: Boolean(body.tools) };
}

// A message added to the conversation, and shown when it is the one on screen.
function appendMessage(conv, msg) {
  conv.messages.push(msg);
  if (conv === current) addTurn(msg, conv.messages.length - 1);
  if (conversations.includes(conv)) persist(conv);
}

// The conversation's next reply and, while the model calls the MCP tools it was offered, the
// calls (each asked for first) and the replies that read their results: at most maxRounds rounds
// of calls, after which the calls are answered "not run" and the loop ends.
async function reply(conv) {
  controller = new AbortController();
  const signal = controller.signal;
  setBusy(true);
  try {
    for (let round = 1; ; round++) {
      const { msg, view, offered } = await generate(conv, signal);
      if (!offered || msg.error || signal.aborted || !msg.tool_calls.some(Boolean)) break;
      const limit = mcp.settings.maxRounds;
      const refusal = round > limit ? 'Not run: this reply reached the limit of ' + limit + ' rounds of tool calls.' : null;
      const boxes = new Map([...view.tools.querySelectorAll('.tool-call')].map((b) => [b.dataset.callId, b]));
      await mcpRunCalls(msg, conv === current ? boxes : new Map(), signal, refusal, (m) => appendMessage(conv, m));
      if (refusal || signal.aborted) break;
    }
  } finally {
    controller = null;
    setBusy(false);
  }
}

// ---- the conversation's view ---------------------------------------------------------------

function button(cls, text, title) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = cls;
  b.textContent = text;
  if (title) b.title = title;
  return b;
}

function showToolCalls(box, calls) {
  box.replaceChildren();
  for (const call of calls) {
    if (!call) continue;
    const div = document.createElement('div');
    div.className = 'tool-call';
    div.dataset.callId = call.id;
    const head = document.createElement('div');
    head.append('Tool call: ');
    const name = document.createElement('code');
    name.className = 'tool-name';
    name.textContent = call.function.name;
    head.append(name);
    const args = document.createElement('pre');
    args.className = 'tool-args';
    try {
      args.textContent = JSON.stringify(JSON.parse(call.function.arguments), null, 2);
    } catch (e) {
      args.textContent = call.function.arguments;  // still streaming, or not JSON
    }
    div.append(head, args);
    box.append(div);
  }
}

// Shows an assistant message: its reasoning (open while it streams, folded once the answer
// starts), tool calls, content and stats.
function renderAssistant(msg, view, streaming) {
  clearTimeout(view.timer);
  view.timer = 0;
  view.reasoning.hidden = !msg.reasoning;
  view.reasoningText.textContent = msg.reasoning;
  if (streaming && msg.reasoning && !msg.content && !view.folded) view.reasoning.open = true;
  if (msg.content && view.reasoning.open && !view.folded) {
    view.reasoning.open = false;
    view.folded = true;
  }
  view.summary.textContent = streaming && !msg.content ? 'Thinking\u2026' : 'Reasoning';
  showToolCalls(view.tools, msg.tool_calls || []);
  if (msg.error) {
    view.div.classList.add('error');
    view.content.textContent = 'Error: ' + msg.error;
  } else {
    view.content.innerHTML = renderMarkdown(msg.content);
  }
  if (msg.stats) {
    view.stats.textContent = statsText(msg.stats);
    view.stats.dataset.tokens = String(msg.stats.tokens);
  }
  if (streaming) $('log').scrollTop = $('log').scrollHeight;
}

// Markdown is re-rendered at most every 40 ms while a reply streams.
function scheduleRender(msg, view) {
  if (!view.timer) view.timer = setTimeout(() => renderAssistant(msg, view, true), 40);
}

// A tool message: which call it answers, how it went (ok, error, denied, not run), the text.
function showToolResult(div, msg) {
  const status = msg.status || 'ok';
  div.dataset.status = status;
  const head = document.createElement('div');
  head.className = 'tool-result-head';
  head.append({ ok: 'Result of ', error: 'Error from ', denied: 'Denied: ' }[status] || 'Not run: ');
  const name = document.createElement('code');
  name.textContent = msg.name || msg.tool_call_id;
  head.append(name);
  const out = document.createElement('pre');
  out.className = 'tool-output';
  out.textContent = msg.content;
  div.append(head, out);
}

// Appends the view of conv.messages[index]; returns its parts.
function addTurn(msg, index) {
  const turn = document.createElement('div');
  turn.className = 'turn ' + msg.role;
  turn.dataset.index = String(index);
  const div = document.createElement('div');
  div.className = 'msg ' + msg.role;
  const actions = document.createElement('div');
  actions.className = 'actions';
  turn.append(div, actions);
  $('log').append(turn);
  if (msg.role === 'tool') {
    showToolResult(div, msg);
    actions.append(button('copy', 'Copy', 'Copy the result'));
    $('log').scrollTop = $('log').scrollHeight;
    return { div };
  }
  if (msg.role === 'user') {
    div.textContent = msg.content;
    actions.append(button('copy', 'Copy', 'Copy the message'),
      button('edit', 'Edit', 'Edit and send again from here'));
    $('log').scrollTop = $('log').scrollHeight;
    return { div };
  }
  div.innerHTML = '<details class="reasoning" hidden><summary>Reasoning</summary>' +
    '<div class="reasoning-text"></div></details><div class="tool-calls"></div>' +
    '<div class="content"></div><div class="stats"></div>';
  actions.append(button('copy', 'Copy', 'Copy the reply (markdown)'),
    button('regenerate', 'Regenerate', 'Replace this reply with a new one'));
  const view = {
    div, timer: 0, folded: false,
    reasoning: div.querySelector('.reasoning'), summary: div.querySelector('summary'),
    reasoningText: div.querySelector('.reasoning-text'), tools: div.querySelector('.tool-calls'),
    content: div.querySelector('.content'), stats: div.querySelector('.stats'),
  };
  renderAssistant(msg, view, false);
  if (msg.stats && msg.stats.note === 'stopped') div.dataset.stopped = 'true';
  div.dataset.done = msg.stats || msg.error ? 'true' : 'false';
  $('log').scrollTop = $('log').scrollHeight;
  return view;
}

function renderLog() {
  $('log').replaceChildren();
  current.messages.forEach((m, i) => addTurn(m, i));
  $('title').textContent = conversations.includes(current) ? current.title : '';
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  for (const b of document.querySelectorAll('.actions .edit, .actions .regenerate')) b.disabled = busy;
}

function send(text) {
  if (!current.messages.length && current.title === 'New chat') current.title = titleFrom(text);
  current.messages.push({ role: 'user', content: text });
  persist(current);
  addTurn(current.messages[current.messages.length - 1], current.messages.length - 1);
  $('title').textContent = current.title;
  return reply(current);
}

// Drops conv.messages[index] and everything after it.
function truncate(index) {
  current.messages.length = index;
  renderLog();
}

function copyText(text, btn) {
  const done = () => {
    const old = btn.textContent;
    btn.textContent = 'Copied';
    setTimeout(() => { btn.textContent = old; }, 1200);
  };
  const fallback = () => {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
    done();
  };
  if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, fallback);
  else fallback();
}

// Edit a user message in place; sending it drops everything after and asks again.
function editMessage(turn, index) {
  const msgDiv = turn.querySelector('.msg');
  const editor = document.createElement('div');
  editor.className = 'editor';
  const area = document.createElement('textarea');
  area.value = current.messages[index].content;
  const row = document.createElement('div');
  row.className = 'actions';
  const save = button('save-edit', 'Send', 'Send the edited message; the replies after it are dropped');
  const cancel = button('cancel-edit', 'Cancel');
  row.append(save, cancel);
  editor.append(area, row);
  msgDiv.hidden = true;
  turn.classList.add('editing');
  turn.querySelector('.actions').hidden = true;
  turn.prepend(editor);
  area.focus();
  cancel.addEventListener('click', () => renderLog());
  save.addEventListener('click', () => {
    const text = area.value.trim();
    if (!text || controller) return;
    current.messages.length = index;
    current.messages.push({ role: 'user', content: text });
    persist(current);
    renderLog();
    reply(current);
  });
}

$('log').addEventListener('click', (e) => {
  const btn = e.target.closest('button');
  if (!btn) return;
  if (btn.classList.contains('copy-code')) {
    return copyText(btn.closest('.code-block').querySelector('code').textContent, btn);
  }
  const turn = btn.closest('.turn');
  if (!turn || !turn.dataset.index) return;
  const index = Number(turn.dataset.index);
  const msg = current.messages[index];
  if (btn.classList.contains('copy')) return copyText(msg.content, btn);
  if (controller) return;
  if (btn.classList.contains('edit')) return editMessage(turn, index);
  if (btn.classList.contains('regenerate')) {
    truncate(index);
    reply(current);
  }
});

// ---- the list of conversations and the settings -----------------------------------------

function setStatus(text, isError) {
  $('import-status').textContent = text;
  $('import-status').classList.toggle('error', Boolean(isError));
}

function switchTo(conv) {
  if (controller) controller.abort();
  current = conv;
  sessionStorage.setItem(CURRENT_KEY, conv.id);
  renderLog();
  showSettings();
  renderList();
}

function renameConversation(li, conv) {
  const input = document.createElement('input');
  input.className = 'conv-title-input';
  input.value = conv.title;
  li.replaceChildren(input);
  input.focus();
  input.select();
  let finished = false;
  const finish = (keep) => {
    if (finished) return;
    finished = true;
    if (keep && input.value.trim()) {
      conv.title = input.value.trim();
      persist(conv, false);
    } else {
      renderList();
    }
    if (conv === current) $('title').textContent = conv.title;
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') finish(true);
    if (e.key === 'Escape') finish(false);
  });
  input.addEventListener('blur', () => finish(true));
}

// Delete asks once more on the same button ("Delete?") for a few seconds.
function deleteConversation(btn, conv) {
  if (!btn.classList.contains('confirm')) {
    btn.classList.add('confirm');
    btn.textContent = 'Delete?';
    setTimeout(() => {
      btn.classList.remove('confirm');
      btn.textContent = '\u2715';
    }, 3000);
    return;
  }
  conversations = conversations.filter((c) => c !== conv);
  saveAll();
  if (conv === current) switchTo(conversations[0] || newConversation());
  else renderList();
}

function renderList() {
  const ul = $('conversations');
  ul.replaceChildren();
  for (const conv of conversations) {
    const li = document.createElement('li');
    li.className = 'conv' + (conv === current ? ' current' : '');
    li.dataset.id = conv.id;
    const open = button('conv-open', conv.title, conv.title);
    const rename = button('conv-rename', '\u270e', 'Rename');
    const del = button('conv-delete', '\u2715', 'Delete');
    open.addEventListener('click', () => switchTo(conv));
    rename.addEventListener('click', () => renameConversation(li, conv));
    del.addEventListener('click', () => deleteConversation(del, conv));
    li.append(open, rename, del);
    ul.append(li);
  }
}

function showSettings() {
  $('system').value = current.settings.system || '';
  for (const [field, id] of SAMPLING) $(id).value = current.settings[field] ?? '';
}

function onSettingInput(field, value) {
  current.settings[field] = value;
  if (conversations.includes(current)) persist(current, false);
}

// ---- export and import ---------------------------------------------------------------------

function exportJson() {
  return JSON.stringify({ format: 'minfer-chat', version: 1, conversations }, null, 2);
}

function describe(v) {
  if (Array.isArray(v)) return 'an array';
  if (v === null) return 'null';
  return typeof v === 'string' ? JSON.stringify(v.length > 30 ? v.slice(0, 30) + '...' : v) : typeof v;
}

function checkMessage(m, where) {
  if (!m || typeof m !== 'object' || Array.isArray(m)) throw new Error(where + ': expected an object, got ' + describe(m));
  if (!['user', 'assistant', 'system', 'tool'].includes(m.role)) {
    throw new Error(where + ".role: expected 'user', 'assistant', 'system' or 'tool', got " + describe(m.role));
  }
  if (typeof m.content !== 'string') throw new Error(where + '.content: expected a string, got ' + describe(m.content));
  const out = { role: m.role, content: m.content };
  if (m.role === 'tool') {
    if (typeof m.tool_call_id !== 'string') {
      throw new Error(where + '.tool_call_id: expected a string, got ' + describe(m.tool_call_id));
    }
    out.tool_call_id = m.tool_call_id;
    out.name = typeof m.name === 'string' ? m.name : '';
    out.status = ['ok', 'error', 'denied', 'not run'].includes(m.status) ? m.status : 'ok';
  }
  if (m.role === 'assistant') {
    if (m.reasoning !== undefined && typeof m.reasoning !== 'string') {
      throw new Error(where + '.reasoning: expected a string, got ' + describe(m.reasoning));
    }
    if (m.tool_calls !== undefined && !Array.isArray(m.tool_calls)) {
      throw new Error(where + '.tool_calls: expected an array, got ' + describe(m.tool_calls));
    }
    out.reasoning = m.reasoning || '';
    out.tool_calls = (m.tool_calls || []).filter((c) => c && c.function && typeof c.function.name === 'string')
      .map((c) => ({ id: String(c.id || ''), type: 'function', function: { name: c.function.name,
        arguments: typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments ?? {}) } }));
    if (m.stats && typeof m.stats === 'object' && typeof m.stats.tokens === 'number') out.stats = m.stats;
    if (typeof m.error === 'string') out.error = m.error;
  }
  return out;
}

function checkConversation(c, where) {
  if (!c || typeof c !== 'object' || Array.isArray(c)) throw new Error(where + ': expected an object, got ' + describe(c));
  if (!Array.isArray(c.messages)) throw new Error(where + '.messages: expected an array, got ' + describe(c.messages));
  if (c.title !== undefined && typeof c.title !== 'string') throw new Error(where + '.title: expected a string, got ' + describe(c.title));
  if (c.settings !== undefined && (typeof c.settings !== 'object' || c.settings === null || Array.isArray(c.settings))) {
    throw new Error(where + '.settings: expected an object, got ' + describe(c.settings));
  }
  const settings = { ...BASE_SETTINGS };
  for (const k of Object.keys(BASE_SETTINGS)) {
    const v = c.settings ? c.settings[k] : undefined;
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' && typeof v !== 'number') {
      throw new Error(where + '.settings.' + k + ': expected a string or a number, got ' + describe(v));
    }
    settings[k] = String(v);
  }
  const messages = [];
  c.messages.forEach((m, j) => {
    const msg = checkMessage(m, where + '.messages[' + j + ']');
    if (msg.role === 'system') settings.system = msg.content;  // the system prompt is a setting here
    else messages.push(msg);
  });
  const first = messages.find((m) => m.role === 'user');
  const now = Date.now();
  return {
    id: makeId(), title: c.title || (first ? titleFrom(first.content) : 'Imported chat'),
    created: typeof c.created === 'number' ? c.created : now,
    updated: typeof c.updated === 'number' ? c.updated : now, settings, messages,
  };
}

// The conversations in an export (or a list of them, or one conversation); throws an Error that
// says what is wrong and where.
function parseImport(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new Error('not JSON: ' + e.message);
  }
  let list;
  if (Array.isArray(data)) list = data;
  else if (data && Array.isArray(data.conversations)) list = data.conversations;
  else if (data && Array.isArray(data.messages)) list = [data];
  else throw new Error('expected {"conversations": [...]}, a list of conversations, or one conversation with "messages"');
  const single = !Array.isArray(data) && !Array.isArray(data.conversations);
  return list.map((c, i) => checkConversation(c, single ? 'conversation' : 'conversations[' + i + ']'));
}

function importText(text, name) {
  let imported;
  try {
    imported = parseImport(text);
  } catch (e) {
    setStatus('Import of ' + name + ' failed: ' + e.message, true);
    return;
  }
  conversations.push(...imported);
  conversations.sort((a, b) => b.updated - a.updated);
  saveAll();
  setStatus('Imported ' + imported.length + ' conversation' + (imported.length === 1 ? '' : 's') + ' from ' + name + '.', false);
  if (imported.length) switchTo(imported[0]);
  else renderList();
}

// ---- start -----------------------------------------------------------------------------------

$('form').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('input').value.trim();
  if (!text || controller) return;
  $('input').value = '';
  send(text);
});
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    $('form').requestSubmit();
  }
});
$('stop').addEventListener('click', () => { if (controller) controller.abort(); });
$('new-chat').addEventListener('click', () => switchTo(newConversation(current)));
$('system').addEventListener('input', () => onSettingInput('system', $('system').value));
for (const [field, id] of SAMPLING) $(id).addEventListener('input', () => onSettingInput(field, $(id).value));
$('forget-key').addEventListener('click', () => {
  localStorage.removeItem(API_KEY_KEY);
  showKeyState();
});
$('export').addEventListener('click', () => {
  const url = URL.createObjectURL(new Blob([exportJson()], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = 'minfer-chats-' + new Date().toISOString().slice(0, 10) + '.json';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
});
$('import').addEventListener('click', () => $('import-file').click());
$('import-file').addEventListener('change', async () => {
  const file = $('import-file').files[0];
  if (file) importText(await file.text(), file.name);
  $('import-file').value = '';
});

// This tab's conversation survives a reload; a new tab starts a new one.
current = conversations.find((c) => c.id === sessionStorage.getItem(CURRENT_KEY)) || newConversation();
switchTo(current);
showKeyState();
apiFetch('v1/models').then((r) => r.json()).then((b) => { $('model').textContent = b.data[0].id; }).catch(() => {});
