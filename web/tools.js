'use strict';
// The chat page's MCP tools (web/chat.html's settings): MCP servers kept in localStorage (URL and
// extra headers such as Authorization), connected over streamable HTTP (web/mcp.js), their tools
// listed with a switch each, and the enabled ones offered to the model as `tools`. The calls the
// model makes are run here after the user allows each one (once, or always for that tool), and
// every outcome - a result, a denial, a JSON-RPC error, an isError result, a network failure, a
// timeout - becomes the tool message the model reads next. web/chat.js runs the loop.

const MCP_KEY = 'minfer.chat.mcp';  // localStorage: {servers: [config], maxRounds, timeoutS}
const MCP_DEFAULTS = { maxRounds: 8, timeoutS: 60 };

// A server's config: {url, name, headers: {name: value}, disabled: [tool], always: [tool]}.
function loadMcpSettings() {
  const saved = readJson(localStorage, MCP_KEY, {});
  const s = { ...MCP_DEFAULTS, servers: [] };
  if (!saved || typeof saved !== 'object') return s;
  for (const k of Object.keys(MCP_DEFAULTS)) if (Number(saved[k]) >= 1) s[k] = Math.floor(Number(saved[k]));
  for (const c of Array.isArray(saved.servers) ? saved.servers : []) {
    if (!c || typeof c.url !== 'string') continue;
    const list = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);
    const headers = {};
    if (c.headers && typeof c.headers === 'object' && !Array.isArray(c.headers)) {
      for (const [k, v] of Object.entries(c.headers)) if (typeof v === 'string') headers[k] = v;
    }
    s.servers.push({ url: c.url, name: typeof c.name === 'string' ? c.name : '', headers,
      disabled: list(c.disabled), always: list(c.always) });
  }
  return s;
}

const mcp = {
  settings: loadMcpSettings(),
  servers: [],  // {config, client, state: 'connecting'|'ready'|'error', error, tools, prefix}
  byName: new Map(),  // the name offered to the model -> {server, tool}
};

function saveMcpSettings() {
  mcp.settings.servers = mcp.servers.map((s) => s.config);
  try {
    localStorage.setItem(MCP_KEY, JSON.stringify(mcp.settings));
  } catch (e) {
    $('mcp-status').textContent = 'Could not save the MCP settings: ' + e.message;
  }
}

// "Name: value" lines as headers; throws naming the line that has no colon or a bad name.
function parseHeaderLines(text) {
  const headers = {};
  text.split('\n').map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new Error('header line ' + (i + 1) + ' is not "Name: value": ' + JSON.stringify(line));
    }
    headers[name] = line.slice(colon + 1).trim();
  });
  return headers;
}

// Function names allow [A-Za-z0-9_-]{1,64} (OpenAI's rule); names of tools from several servers
// get the server's prefix, made unique among the servers, so two servers cannot collide.
function mcpSafeName(text, max) {
  return (text.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '') || 'x').slice(0, max);
}

function mcpMapNames() {
  mcp.byName.clear();
  const prefixes = new Set();
  for (const server of mcp.servers) {
    let host = server.config.url;
    try {
      host = new URL(server.config.url).hostname;
    } catch (e) { /* the URL as it is */ }
    const base = mcpSafeName(server.config.name || (server.client.serverInfo || {}).name || host, 20);
    let prefix = base;
    for (let n = 2; prefixes.has(prefix); n++) prefix = base + '_' + n;
    prefixes.add(prefix);
    server.prefix = prefix;
    for (const tool of server.tools) {
      const full = prefix + '__' + mcpSafeName(tool.name, 64);
      let name = full.slice(0, 64);
      for (let n = 2; mcp.byName.has(name); n++) name = full.slice(0, 60) + '_' + n;
      tool.exposed = name;
      mcp.byName.set(name, { server, tool });
    }
  }
}

// The `tools` of a chat request: every enabled tool of every connected server.
function mcpToolDefinitions() {
  const defs = [];
  for (const [name, { server, tool }] of mcp.byName) {
    if (server.state !== 'ready' || server.config.disabled.includes(tool.name)) continue;
    const parameters = tool.inputSchema && typeof tool.inputSchema === 'object' ? tool.inputSchema : { type: 'object' };
    defs.push({ type: 'function', function: { name, description: tool.description || tool.title || '', parameters } });
  }
  return defs;
}

async function mcpConnect(server) {
  server.state = 'connecting';
  server.error = '';
  server.tools = [];
  renderMcpServers();
  try {
    await server.client.connect(AbortSignal.timeout(mcp.settings.timeoutS * 1000));
    server.tools = await server.client.listTools(AbortSignal.timeout(mcp.settings.timeoutS * 1000));
    server.state = 'ready';
  } catch (e) {
    server.state = 'error';
    server.error = e.name === 'TimeoutError' ? 'no reply within ' + mcp.settings.timeoutS + ' s' : e.message;
  }
  mcpMapNames();
  renderMcpServers();
}

function mcpAddServer(config) {
  const server = { config, client: new McpClient(config.url, config.headers), state: 'connecting', error: '', tools: [] };
  mcp.servers.push(server);
  return mcpConnect(server);
}

function mcpRemoveServer(server) {
  server.client.close();
  mcp.servers = mcp.servers.filter((s) => s !== server);
  saveMcpSettings();
  mcpMapNames();
  renderMcpServers();
}

function mcpServerView(server) {
  const li = document.createElement('li');
  li.className = 'mcp-server ' + server.state;
  li.dataset.url = server.config.url;
  const head = document.createElement('div');
  head.className = 'mcp-head';
  const name = document.createElement('span');
  name.className = 'mcp-name';
  name.textContent = server.prefix || server.config.url;
  name.title = server.config.url;
  const state = document.createElement('span');
  state.className = 'mcp-state';
  state.textContent = server.state === 'ready' ? server.tools.length + ' tool' + (server.tools.length === 1 ? '' : 's') :
    server.state === 'connecting' ? 'connecting\u2026' : 'error: ' + server.error;
  const again = button('mcp-reconnect', '\u21bb', 'Connect again and list the tools');
  const remove = button('mcp-remove', '\u2715', 'Remove this server');
  again.addEventListener('click', () => mcpConnect(server));
  remove.addEventListener('click', () => mcpRemoveServer(server));
  head.append(name, again, remove);
  const tools = document.createElement('ul');
  tools.className = 'mcp-tools';
  for (const tool of server.tools) tools.append(mcpToolView(server, tool));
  li.append(head, state, tools);
  return li;
}

// A tool's switch (offered to the model or not) and, once always allowed, the way back to asking.
function mcpToolView(server, tool) {
  const li = document.createElement('li');
  li.dataset.tool = tool.name;
  const label = document.createElement('label');
  label.title = tool.description || '';
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.className = 'mcp-tool-enabled';
  box.checked = !server.config.disabled.includes(tool.name);
  box.addEventListener('change', () => {
    server.config.disabled = server.config.disabled.filter((t) => t !== tool.name);
    if (!box.checked) server.config.disabled.push(tool.name);
    saveMcpSettings();
  });
  const name = document.createElement('code');
  name.textContent = tool.name;
  label.append(box, name);
  li.append(label);
  if (server.config.always.includes(tool.name)) {
    const forget = button('mcp-forget', 'always allowed \u2715', 'Ask again before each call of this tool');
    forget.addEventListener('click', () => {
      server.config.always = server.config.always.filter((t) => t !== tool.name);
      saveMcpSettings();
      renderMcpServers();
    });
    li.append(forget);
  }
  return li;
}

function renderMcpServers() {
  $('mcp-servers').replaceChildren(...mcp.servers.map(mcpServerView));
}

// ---- running the calls a reply makes ---------------------------------------------------------

// The text the model reads for a CallToolResult.
function mcpResultText(result) {
  const parts = [];
  for (const c of Array.isArray(result.content) ? result.content : []) {
    if (c.type === 'text') parts.push(c.text);
    else if (c.type === 'resource' && c.resource) parts.push(c.resource.text ?? '[resource ' + c.resource.uri + ']');
    else if (c.type === 'resource_link') parts.push('[resource ' + c.uri + ']');
    else parts.push('[' + c.type + (c.mimeType ? ' ' + c.mimeType : '') + ']');
  }
  if (!parts.length && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}

// Asks in the call's box: resolves 'once', 'always', 'deny' or 'stopped' (the reply was stopped).
function askToRun(box, server, tool, signal) {
  return new Promise((resolve) => {
    const ask = document.createElement('div');
    ask.className = 'tool-approval';
    ask.append('Run ' + tool.name + ' on ' + server.prefix + '? ');
    const once = button('allow-once', 'Allow once');
    const always = button('allow-always', 'Always for this tool');
    const deny = button('deny', 'Deny');
    ask.append(once, always, deny);
    box.append(ask);
    const done = (answer) => {
      signal.removeEventListener('abort', stopped);
      ask.replaceChildren({ once: 'allowed once', always: 'always allowed', deny: 'denied', stopped: 'stopped' }[answer]);
      ask.dataset.answer = answer;
      resolve(answer);
    };
    const stopped = () => done('stopped');
    signal.addEventListener('abort', stopped);
    once.addEventListener('click', () => done('once'));
    always.addEventListener('click', () => done('always'));
    deny.addEventListener('click', () => done('deny'));
  });
}

// tools/call under the timeout and the reply's stop: {status, content}.
async function mcpRun(server, tool, args, signal) {
  const timer = new AbortController();
  let timedOut = false;
  const ms = mcp.settings.timeoutS * 1000;
  const id = setTimeout(() => { timedOut = true; timer.abort(); }, ms);
  const stop = () => timer.abort();
  signal.addEventListener('abort', stop);
  try {
    const result = await server.client.callTool(tool.name, args, timer.signal);
    if (!result || typeof result !== 'object') return { status: 'error', content: 'Error: the tool returned no result' };
    const text = mcpResultText(result);
    return result.isError ? { status: 'error', content: 'Error: ' + text } : { status: 'ok', content: text };
  } catch (e) {
    if (timedOut) return { status: 'error', content: 'Error: ' + tool.name + ' gave no result within ' + mcp.settings.timeoutS + ' s' };
    if (signal.aborted) return { status: 'not run', content: 'Not run: the user stopped the reply.' };
    return { status: 'error', content: 'Error: ' + e.message };
  } finally {
    clearTimeout(id);
    signal.removeEventListener('abort', stop);
  }
}

// One call of the reply: {status, content}, the call's box (if shown) updated as it goes.
async function mcpOutcome(call, box, signal) {
  if (signal.aborted) return { status: 'not run', content: 'Not run: the user stopped the reply.' };
  const found = mcp.byName.get(call.function.name);
  if (!found || found.server.state !== 'ready') {
    return { status: 'error', content: 'Error: there is no tool named ' + call.function.name + ' (connected)' };
  }
  const { server, tool } = found;
  if (server.config.disabled.includes(tool.name)) {
    return { status: 'error', content: 'Error: the tool ' + call.function.name + ' is switched off' };
  }
  let args;
  try {
    args = call.function.arguments.trim() ? JSON.parse(call.function.arguments) : {};
  } catch (e) {
    return { status: 'error', content: 'Error: the arguments are not JSON: ' + e.message };
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) {
    return { status: 'error', content: 'Error: the arguments are not a JSON object' };
  }
  if (!server.config.always.includes(tool.name)) {
    const answer = box ? await askToRun(box, server, tool, signal) : 'stopped';
    if (answer === 'stopped') return { status: 'not run', content: 'Not run: the user stopped the reply.' };
    if (answer === 'deny') return { status: 'denied', content: 'The user denied this call.' };
    if (answer === 'always') {
      server.config.always.push(tool.name);
      saveMcpSettings();
      renderMcpServers();
    }
  }
  return mcpRun(server, tool, args, signal);
}

// Runs (or refuses, with `refusal` set) every call of assistant message `msg`; `onResult(message)`
// receives each tool message, in the calls' order. `boxes`: the calls' boxes by call id.
async function mcpRunCalls(msg, boxes, signal, refusal, onResult) {
  for (const call of msg.tool_calls) {
    if (!call) continue;
    const outcome = refusal ? { status: 'not run', content: refusal } :
      await mcpOutcome(call, boxes.get(call.id), signal);
    onResult({ role: 'tool', tool_call_id: call.id, name: call.function.name, content: outcome.content, status: outcome.status });
  }
}

function initMcp() {
  $('mcp-rounds').value = mcp.settings.maxRounds;
  $('mcp-timeout').value = mcp.settings.timeoutS;
  for (const [id, key] of [['mcp-rounds', 'maxRounds'], ['mcp-timeout', 'timeoutS']]) {
    $(id).addEventListener('input', () => {
      const v = Number($(id).value);
      if (Number.isInteger(v) && v >= 1) {
        mcp.settings[key] = v;
        saveMcpSettings();
      }
    });
  }
  $('mcp-add').addEventListener('click', () => {
    const url = $('mcp-url').value.trim();
    let headers;
    try {
      if (!/^https?:\/\/./.test(url)) throw new Error('the URL must start with http:// or https://');
      new URL(url);  // eslint-disable-line no-new
      if (mcp.servers.some((s) => s.config.url === url)) throw new Error(url + ' is in the list already');
      headers = parseHeaderLines($('mcp-headers').value);
    } catch (e) {
      $('mcp-status').textContent = 'Not added: ' + e.message;
      return;
    }
    $('mcp-status').textContent = '';
    $('mcp-url').value = '';
    $('mcp-headers').value = '';
    const done = mcpAddServer({ url, name: '', headers, disabled: [], always: [] });
    saveMcpSettings();
    return done;
  });
  const configs = mcp.settings.servers;
  for (const config of configs) mcpAddServer(config);
}
initMcp();
