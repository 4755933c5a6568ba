'use strict';
// A small client of the Model Context Protocol's streamable HTTP transport (spec revisions
// 2025-03-26 and later, "Transports" and "Lifecycle"), for the chat page's tools (web/tools.js).
// Each JSON-RPC message is POSTed to the server's one URL with Accept: application/json,
// text/event-stream; the server answers a request with one JSON body or with an SSE stream that
// carries the response (and possibly notifications or its own requests before it), and answers a
// notification with 202. initialize may return an Mcp-Session-Id header, sent back on every later
// request with the negotiated MCP-Protocol-Version; a 404 to a request carrying the session id
// means the session ended, and the client initializes again.
//
// The page is served by minfer and the MCP server is elsewhere, so the server must allow this
// page's origin (CORS): the request headers Content-Type, Mcp-Session-Id, MCP-Protocol-Version
// and any the user adds (Authorization), and Access-Control-Expose-Headers: Mcp-Session-Id.

const MCP_PROTOCOL_VERSION = '2025-06-18';
const MCP_CLIENT_INFO = { name: 'minfer-chat', version: '1' };

// What went wrong talking to an MCP server: kind is 'network', 'http', 'protocol' (a reply that
// is not the JSON-RPC we asked for), 'rpc' (a JSON-RPC error; code set) or 'timeout'.
class McpError extends Error {
  constructor(kind, message, code) {
    super(message);
    this.name = 'McpError';
    this.kind = kind;
    this.code = code;
  }
}

// The JSON-RPC messages in an SSE body (events' data lines joined by newlines), in order.
async function* mcpSseMessages(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      const blocks = buffer.replace(/\r\n?/g, '\n').split('\n\n');
      buffer = done ? '' : blocks.pop();
      for (const block of blocks) {
        const data = block.split('\n').filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n');
        if (!data) continue;  // a comment, a keep-alive or an event with no data
        let message;
        try {
          message = JSON.parse(data);
        } catch (e) {
          throw new McpError('protocol', 'an SSE event that is not JSON: ' + data.slice(0, 80));
        }
        yield message;
      }
      if (done) return;
    }
  } finally {
    reader.cancel().catch(() => {});  // the response came: a stream the server keeps open ends here
  }
}

class McpClient {
  // url: the server's streamable HTTP endpoint; headers: extra request headers ({name: value}).
  constructor(url, headers = {}) {
    this.url = url;
    this.headers = headers;
    this.sessionId = null;
    this.protocolVersion = null;
    this.serverInfo = null;
    this.nextId = 1;
  }

  // initialize, then notifications/initialized.
  async connect(signal) {
    this.sessionId = null;
    this.protocolVersion = null;
    const result = await this.rpc('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION, capabilities: {}, clientInfo: MCP_CLIENT_INFO,
    }, signal);
    if (!result || typeof result.protocolVersion !== 'string') {
      throw new McpError('protocol', 'the initialize result has no protocolVersion');
    }
    this.protocolVersion = result.protocolVersion;
    this.serverInfo = result.serverInfo || null;
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, signal);
    return result;
  }

  // Every tool, following nextCursor.
  async listTools(signal) {
    const tools = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const result = await this.request('tools/list', cursor ? { cursor } : {}, signal);
      if (!result || !Array.isArray(result.tools)) throw new McpError('protocol', 'tools/list returned no tools array');
      tools.push(...result.tools.filter((t) => t && typeof t.name === 'string'));
      if (!result.nextCursor) return tools;
      cursor = result.nextCursor;
    }
    throw new McpError('protocol', 'tools/list gave more than 100 pages');
  }

  // tools/call: the CallToolResult ({content, isError, structuredContent}).
  callTool(name, args, signal) {
    return this.request('tools/call', { name, arguments: args }, signal);
  }

  // A request in the session; once more after initializing again if the session has expired.
  async request(method, params, signal) {
    if (!this.protocolVersion) await this.connect(signal);
    try {
      return await this.rpc(method, params, signal);
    } catch (e) {
      if (!(e instanceof McpError && e.expired)) throw e;
      await this.connect(signal);
      return this.rpc(method, params, signal);
    }
  }

  // A request; one given up on (signal aborted: stopped or timed out) is cancelled on the server
  // too (notifications/cancelled, spec "Cancellation"), except initialize, which must not be.
  async rpc(method, params, signal) {
    const id = this.nextId++;
    try {
      return await this.exchange(id, method, params, signal);
    } catch (e) {
      if (signal && signal.aborted && method !== 'initialize') {
        this.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the user or a timeout ended it' } })
          .catch(() => {});
      }
      throw e;
    }
  }

  async exchange(id, method, params, signal) {
    const res = await this.post({ jsonrpc: '2.0', id, method, params }, signal);
    const type = (res.headers.get('Content-Type') || '').split(';')[0].trim().toLowerCase();
    if (type === 'application/json') return this.answer(await res.json().catch(() => null), id, method);
    if (type !== 'text/event-stream') {
      throw new McpError('protocol', method + ': expected application/json or text/event-stream, got ' +
        (type || 'no Content-Type') + ' (HTTP ' + res.status + ')');
    }
    for await (const message of mcpSseMessages(res)) {
      for (const m of Array.isArray(message) ? message : [message]) {
        if (m && m.id === id && !m.method) return this.answer(m, id, method);
        if (m && m.method && m.id !== undefined) this.refuse(m, signal);
      }
    }
    throw new McpError('protocol', method + ': the event stream ended without a response');
  }

  // The result of response `m` to request `id`, or the McpError it carries.
  answer(m, id, method) {
    const found = Array.isArray(m) ? m.find((x) => x && x.id === id) : m;
    if (!found || typeof found !== 'object') throw new McpError('protocol', method + ': the reply is not a JSON-RPC response');
    if (found.error) {
      const err = found.error;
      throw new McpError('rpc', method + ': JSON-RPC error ' + err.code + ': ' + err.message, err.code);
    }
    if (!('result' in found)) throw new McpError('protocol', method + ': the response has neither result nor error');
    return found.result;
  }

  // A request the server makes of us: ping is answered; sampling, roots and elicitation are
  // not offered (capabilities: {}), so anything else gets "method not found".
  refuse(m, signal) {
    const reply = m.method === 'ping' ? { jsonrpc: '2.0', id: m.id, result: {} } :
      { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'minfer chat does not offer ' + m.method } };
    this.post(reply, signal).catch(() => {});
  }

  // POSTs one message; a non-2xx status becomes an McpError ('http', expired on a session's 404).
  async post(message, signal) {
    const headers = {
      ...this.headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    };
    if (this.sessionId) headers['Mcp-Session-Id'] = this.sessionId;
    if (this.protocolVersion) headers['MCP-Protocol-Version'] = this.protocolVersion;
    let res;
    try {
      res = await fetch(this.url, { method: 'POST', headers, body: JSON.stringify(message), signal });
    } catch (e) {
      if (e.name === 'AbortError' || e.name === 'TimeoutError') throw e;
      throw new McpError('network', 'cannot reach ' + this.url + ' (' + e.message +
        '; a server elsewhere must allow this page\'s origin by CORS)');
    }
    if (res.ok) {
      if (message.method === 'initialize') this.sessionId = res.headers.get('Mcp-Session-Id');
      return res;
    }
    const text = await res.text().catch(() => '');
    let detail = text.slice(0, 200);
    try {
      const body = JSON.parse(text);
      if (body && body.error && body.error.message) detail = body.error.message;
    } catch (e) { /* not JSON: the text as it is */ }
    // Refused after initialize with no session: perhaps CORS hid the session's header.
    if (!this.sessionId && this.protocolVersion && (res.status === 400 || res.status === 404)) {
      detail += ' (if the server keeps sessions, it must expose Mcp-Session-Id to this page by CORS)';
    }
    const err = new McpError('http', (message.method || 'a reply') + ': HTTP ' + res.status + (detail ? ': ' + detail : ''));
    err.expired = res.status === 404 && Boolean(this.sessionId) && message.method !== 'initialize';
    throw err;
  }

  // Ends the session (DELETE), when there is one; a server may refuse with 405.
  async close() {
    if (!this.sessionId) return;
    const headers = { ...this.headers, 'Mcp-Session-Id': this.sessionId };
    if (this.protocolVersion) headers['MCP-Protocol-Version'] = this.protocolVersion;
    this.sessionId = null;
    this.protocolVersion = null;
    await fetch(this.url, { method: 'DELETE', headers }).catch(() => {});
  }
}
