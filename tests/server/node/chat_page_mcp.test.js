// The chat page's MCP tools in Debian's headless chromium (playwright-core): two MCP servers
// started here with the official SDK (@modelcontextprotocol/sdk, streamable HTTP on 127.0.0.1,
// one answering with SSE and a session, one with plain JSON), both naming their server "calc" and
// both offering `add`. The page connects to them, lists their tools, offers the enabled ones to
// the model under names that cannot collide, and runs the calls of canned model replies
// (page.route answers /v1/chat/completions) after asking: allowed once, always (remembered), or
// denied. The next request to the model carries each outcome, errors included (a JSON-RPC error,
// an isError result, a timeout, an unknown tool, a server gone), and the rounds are bounded. Last,
// the real server takes the tools as offered.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema, EmptyResultSchema, ErrorCode, ListToolsRequestSchema, McpError,
} from '@modelcontextprotocol/sdk/types.js';

import { browserSkip, launchBrowser, sse } from './chat_page_browser.js';
import { skipReason, startServer } from './helpers.js';

const skip = skipReason || browserSkip;

const NUMBERS = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] };
const NOTHING = { type: 'object', properties: {} };

// The tools of the first server; the second has only `add`.
const TOOLS = [
  { name: 'add', description: 'Adds two numbers.', inputSchema: NUMBERS },
  { name: 'broken', description: 'Answers with a JSON-RPC error.', inputSchema: NOTHING },
  { name: 'fail', description: 'Answers with an isError result.', inputSchema: NOTHING },
  { name: 'slow', description: 'Answers after 20 s.', inputSchema: NOTHING },
];

// An MCP server on 127.0.0.1 that allows any origin (CORS) and records every tools/call
// ({name, arguments}), every Authorization header it is sent, and the calls the client cancelled.
// json: reply with JSON bodies instead of SSE streams; else `add` pings the client on the call's
// stream first and answers once the client has answered. exposeSession false: CORS hides the
// Mcp-Session-Id header from the page, as a server set up carelessly does.
async function startMcpServer(tools, json, exposeSession = true) {
  const seen = { calls: [], authorization: [], sessions: new Map(), cancelled: [] };
  const handle = async (name, args, extra) => {
    seen.calls.push({ name, arguments: args });
    extra.signal.addEventListener('abort', () => seen.cancelled.push(name));
    if (name === 'add' && !json) await extra.sendRequest({ method: 'ping' }, EmptyResultSchema);
    if (name === 'add') return { content: [{ type: 'text', text: String(args.a + args.b) }] };
    if (name === 'fail') return { isError: true, content: [{ type: 'text', text: 'the disk is full' }] };
    if (name === 'slow') {  // answers after 20 s, or ends when the client cancels the call
      await new Promise((r) => {
        const timer = setTimeout(r, 20000);
        extra.signal.addEventListener('abort', () => r(clearTimeout(timer)));
      });
      return { content: [{ type: 'text', text: 'late' }] };
    }
    throw new McpError(ErrorCode.InvalidParams, `${name} is broken today`);
  };
  const newSession = async () => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID, enableJsonResponse: json,
      onsessioninitialized: (id) => seen.sessions.set(id, transport),
    });
    const server = new Server({ name: 'calc', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, (req, extra) => handle(req.params.name, req.params.arguments, extra));
    await server.connect(transport);
    return transport;
  };
  const httpServer = http.createServer(async (req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Authorization, Mcp-Session-Id, MCP-Protocol-Version');
    if (exposeSession) res.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id');
    if (req.method === 'OPTIONS') return res.writeHead(204).end();
    seen.authorization.push(req.headers.authorization || null);
    const id = req.headers['mcp-session-id'];
    const transport = id ? seen.sessions.get(id) : await newSession();
    if (!transport) return res.writeHead(404).end();
    await transport.handleRequest(req, res);
  });
  await new Promise((r) => httpServer.listen(0, '127.0.0.1', r));
  seen.url = `http://127.0.0.1:${httpServer.address().port}/mcp`;
  seen.close = () => new Promise((r) => {
    httpServer.closeAllConnections();
    httpServer.close(r);
  });
  return seen;
}

const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
// A model reply that calls tools: [[id, name, argumentsText]].
const callsReply = (calls) => sse(calls.flatMap(([id, name, args], index) => [
  { tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] },
  { tool_calls: [{ index, function: { arguments: args } }] },
]), usage, 'tool_calls');
const textReply = (text) => sse([{ role: 'assistant', content: text }], usage);

// Answers /v1/chat/completions with `replies` in turn; returns the request bodies it got.
async function routeReplies(page, replies) {
  const bodies = [];
  await page.route('**/v1/chat/completions', (route) => {
    bodies.push(route.request().postDataJSON());
    const body = replies[Math.min(bodies.length, replies.length) - 1];
    route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
  });
  return bodies;
}

const doneReplies = (page) => page.locator('.msg.assistant[data-done="true"]').count();
async function waitReplies(page, n) {
  await page.waitForFunction((k) => document.querySelectorAll('.msg.assistant[data-done="true"]').length >= k &&
    !document.getElementById('send').disabled, n, { timeout: 20000 });
}

const toolMessages = (body) => body.messages.filter((m) => m.role === 'tool');

describe('chat page: MCP tools', { skip }, () => {
  let server;
  let launched;
  let sseServer;
  let jsonServer;
  let hiddenServer;
  const errors = [];
  before(async () => {
    server = await startServer(['-np', '1']);
    sseServer = await startMcpServer(TOOLS, false);
    jsonServer = await startMcpServer(TOOLS.slice(0, 1), true);
    hiddenServer = await startMcpServer(TOOLS, false, false);
    launched = await launchBrowser();
  });
  after(async () => {
    if (launched) await launched.close();
    await sseServer.close();
    await jsonServer.close();
    await hiddenServer.close();
    assert.equal((await server.stop()).code, 0);
  });
  const serverView = (page, url) => page.locator(`.mcp-server[data-url="${url}"]`);
  // Waits until the page lists `count` tools of the MCP server at `url`.
  const listed = (page, url, count) => serverView(page, url).locator('.mcp-state',
    { hasText: count + (count === 1 ? ' tool' : ' tools') }).waitFor();
  // A page at /, once the MCP servers it has kept (in localStorage) have listed their tools.
  const open = async (...kept) => {
    const page = await launched.context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(server.url + '/');
    for (const [mcpServer, count] of kept) await listed(page, mcpServer.url, count);
    return page;
  };
  // Closes the page after checking that no script of any page threw.
  const closeChecked = async (page) => {
    assert.deepEqual(errors, []);
    await page.close();
  };

  test('servers connect and list their tools; an allowed call runs and the model reads its result', async () => {
    const page = await open();
    await page.fill('#mcp-url', 'ftp://example.com/mcp');
    await page.click('#mcp-add');
    assert.equal(await page.textContent('#mcp-status'), 'Not added: the URL must start with http:// or https://');
    await page.fill('#mcp-url', sseServer.url);
    await page.fill('#mcp-headers', 'Authorization Bearer t0k');
    await page.click('#mcp-add');
    assert.equal(await page.textContent('#mcp-status'),
      'Not added: header line 1 is not "Name: value": "Authorization Bearer t0k"');
    await page.fill('#mcp-headers', 'Authorization: Bearer t0k');
    await page.click('#mcp-add');
    await listed(page, sseServer.url, 4);
    await page.fill('#mcp-url', jsonServer.url);
    await page.click('#mcp-add');
    await listed(page, jsonServer.url, 1);
    await page.fill('#mcp-url', jsonServer.url);
    await page.click('#mcp-add');
    assert.equal(await page.textContent('#mcp-status'), `Not added: ${jsonServer.url} is in the list already`);
    assert.deepEqual(await serverView(page, sseServer.url).locator('.mcp-tools li').evaluateAll(
      (lis) => lis.map((li) => li.dataset.tool)), ['add', 'broken', 'fail', 'slow']);
    assert.deepEqual(await page.locator('.mcp-name').allTextContents(), ['calc', 'calc_2']);
    await serverView(page, sseServer.url).locator('li[data-tool="slow"] .mcp-tool-enabled').uncheck();

    const bodies = await routeReplies(page, [callsReply([['call_1', 'calc_2__add', '{"a": 2, "b": 3}']]),
      textReply('The sum is 5.')]);
    await page.fill('#input', 'What is 2 + 3?');
    await page.press('#input', 'Enter');
    const ask = page.locator('.tool-call[data-call-id="call_1"] .tool-approval');
    await ask.locator('.allow-once').waitFor();
    assert.equal(jsonServer.calls.length, 0, 'nothing runs before the user allows it');
    assert.match(await ask.textContent(), /^Run add on calc_2\?/);
    await ask.locator('.allow-once').click();
    await waitReplies(page, 2);

    assert.deepEqual(jsonServer.calls, [{ name: 'add', arguments: { a: 2, b: 3 } }]);
    assert.deepEqual(sseServer.calls, []);
    assert.equal(bodies.length, 2);
    assert.deepEqual(bodies[0].tools.map((t) => t.function.name), ['calc__add', 'calc__broken', 'calc__fail', 'calc_2__add']);
    assert.deepEqual(bodies[0].tools[0].function.parameters, NUMBERS);
    assert.equal(bodies[0].tools[0].function.description, 'Adds two numbers.');
    assert.deepEqual(bodies[1].messages.slice(-2), [
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'calc_2__add', arguments: '{"a": 2, "b": 3}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '5' }]);
    assert.equal(await page.textContent('.msg.tool .tool-result-head'), 'Result of calc_2__add');
    assert.equal(await page.textContent('.msg.tool .tool-output'), '5');
    assert.equal((await page.textContent('.turn.assistant >> nth=1 >> .content')).trim(), 'The sum is 5.');
    assert.equal(await ask.getAttribute('data-answer'), 'once');
    // The header went with every request to its server, and the session was kept.
    assert.ok(sseServer.authorization.length >= 3);
    assert.ok(sseServer.authorization.every((a) => a === 'Bearer t0k'), sseServer.authorization.join());
    assert.ok(jsonServer.authorization.every((a) => a === null));
    assert.equal(sseServer.sessions.size, 1);

    // Kept in localStorage: a reload connects again; the history and the switch stay.
    await page.reload();
    await listed(page, sseServer.url, 4);
    assert.equal(await serverView(page, sseServer.url).locator('li[data-tool="slow"] .mcp-tool-enabled').isChecked(), false);
    assert.equal(await page.textContent('.msg.tool .tool-output'), '5');
    await closeChecked(page);
  });

  test('"always for this tool" is remembered and later calls run unasked; a denied call is not run', async () => {
    const page = await open([sseServer, 4], [jsonServer, 1]);
    sseServer.calls.length = 0;
    sseServer.sessions.clear();  // the server forgets the session: the page starts a new one
    const bodies = await routeReplies(page, [
      callsReply([['c1', 'calc__add', '{"a": 1, "b": 1}'], ['c2', 'calc__add', '{"a": 10, "b": 20}']]),
      callsReply([['c3', 'calc__fail', '{}']]),
      textReply('Done.')]);
    await page.fill('#input', 'Add twice');
    await page.press('#input', 'Enter');
    await page.click('.tool-call[data-call-id="c1"] .allow-always');
    await page.click('.tool-call[data-call-id="c3"] .deny');
    await waitReplies(page, 3);

    assert.equal(await page.locator('.tool-call[data-call-id="c2"] .tool-approval').count(), 0, 'c2 was not asked');
    assert.deepEqual(sseServer.calls, [{ name: 'add', arguments: { a: 1, b: 1 } }, { name: 'add', arguments: { a: 10, b: 20 } }]);
    assert.equal(sseServer.sessions.size, 1);
    assert.deepEqual(toolMessages(bodies[2]), [
      { role: 'tool', tool_call_id: 'c1', content: '2' },
      { role: 'tool', tool_call_id: 'c2', content: '30' },
      { role: 'tool', tool_call_id: 'c3', content: 'The user denied this call.' }]);
    assert.deepEqual(await page.$$eval('.msg.tool', (ds) => ds.map((d) => d.dataset.status)), ['ok', 'ok', 'denied']);
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('minfer.chat.mcp')));
    assert.deepEqual(stored.servers.map((s) => s.always), [['add'], []]);
    assert.deepEqual(stored.servers.map((s) => s.headers), [{ Authorization: 'Bearer t0k' }, {}]);
    assert.equal(await serverView(page, sseServer.url).locator('li[data-tool="add"] .mcp-forget').count(), 1);

    // The conversation, tool messages and all, exports and imports whole.
    const exported = await page.evaluate(() => exportJson());
    const back = await page.evaluate((text) => parseImport(text)[0].messages.map((m) => m.role), exported);
    assert.deepEqual(back, ['user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'assistant']);
    await closeChecked(page);
  });

  test('errors become tool results the model reads; the rounds of calls are bounded', async () => {
    const page = await open([sseServer, 4], [jsonServer, 1]);
    await serverView(page, sseServer.url).locator('li[data-tool="slow"] .mcp-tool-enabled').check();
    await page.fill('#mcp-timeout', '2');
    await page.fill('#mcp-rounds', '2');
    sseServer.calls.length = 0;
    const bodies = await routeReplies(page, [
      callsReply([['e1', 'calc__broken', '{}'], ['e2', 'calc__fail', '{}'], ['e3', 'calc__slow', '{}'],
        ['e4', 'calc__nope', '{}'], ['e5', 'calc__add', '{"a": 1,'], ['e6', 'calc_2__add', '{"a": 1, "b": 2}']]),
      callsReply([['r2', 'calc__add', '{"a": 3, "b": 4}']]),
      callsReply([['r3', 'calc__add', '{"a": 5, "b": 6}']]),
      textReply('never asked for')]);
    await jsonServer.close();  // its tool stays listed; calling it fails
    await page.fill('#input', 'Break things');
    await page.press('#input', 'Enter');
    for (const id of ['e1', 'e2', 'e3', 'e6']) await page.click(`.tool-call[data-call-id="${id}"] .allow-once`);
    await waitReplies(page, 3);

    assert.equal(bodies.length, 3, 'a third round of calls is not run and not sent');
    const results = Object.fromEntries(toolMessages(bodies[1]).map((m) => [m.tool_call_id, m.content]));
    assert.match(results.e1, /^Error: tools\/call: JSON-RPC error -32602: .*broken is broken today/);
    assert.equal(results.e2, 'Error: the disk is full');
    assert.equal(results.e3, 'Error: slow gave no result within 2 s');
    assert.equal(results.e4, 'Error: there is no tool named calc__nope (connected)');
    assert.match(results.e5, /^Error: the arguments are not JSON: /);
    assert.match(results.e6, /^Error: cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp \(/);
    assert.deepEqual(toolMessages(bodies[2]).at(-1), { role: 'tool', tool_call_id: 'r2', content: '7' });
    assert.deepEqual(sseServer.calls.map((c) => c.name), ['broken', 'fail', 'slow', 'add']);
    assert.deepEqual(sseServer.cancelled, ['slow'], 'the call that timed out was cancelled on the server');
    const last = await page.$$eval('.msg.tool', (ds) => ds.map((d) => [d.dataset.status, d.querySelector('.tool-output').textContent]));
    assert.deepEqual(last.at(-1), ['not run', 'Not run: this reply reached the limit of 2 rounds of tool calls.']);
    assert.deepEqual(last.slice(0, 6).map((r) => r[0]), ['error', 'error', 'error', 'error', 'error', 'error']);

    // A server that cannot be reached says so in the settings.
    await page.fill('#mcp-url', jsonServer.url.replace('/mcp', '/gone'));
    await page.click('#mcp-add');
    await page.locator('.mcp-server.error .mcp-state', { hasText: 'error: cannot reach' }).waitFor();
    await page.fill('#mcp-url', hiddenServer.url);
    await page.click('#mcp-add');
    await serverView(page, hiddenServer.url).locator('.mcp-state', { hasText: 'error: ' }).waitFor();
    assert.match(await serverView(page, hiddenServer.url).locator('.mcp-state').textContent(),
      /^error: notifications\/initialized: HTTP 400: .+ \(if the server keeps sessions, it must expose Mcp-Session-Id to this page by CORS\)$/);
    await closeChecked(page);
  });

  test('stop while a call waits for the user: it is not run, and the history stays valid', async () => {
    const page = await open([sseServer, 4]);
    await page.click('#new-chat');
    sseServer.calls.length = 0;
    const bodies = await routeReplies(page, [callsReply([['s1', 'calc__fail', '{}']]), textReply('Fine.')]);
    await page.fill('#input', 'Wait');
    await page.press('#input', 'Enter');
    await page.locator('.tool-call[data-call-id="s1"] .deny').waitFor();
    await page.click('#stop');
    await page.waitForFunction(() => !document.getElementById('send').disabled);
    assert.equal(await page.getAttribute('.tool-call[data-call-id="s1"] .tool-approval', 'data-answer'), 'stopped');
    assert.equal(await page.textContent('.msg.tool .tool-output'), 'Not run: the user stopped the reply.');
    await page.fill('#input', 'Go on');
    await page.press('#input', 'Enter');
    await waitReplies(page, 2);
    assert.deepEqual(sseServer.calls, []);
    assert.deepEqual(bodies[1].messages.map((m) => m.role), ['user', 'assistant', 'tool', 'user']);
    assert.equal(bodies[1].messages[2].content, 'Not run: the user stopped the reply.');
    await closeChecked(page);
  });

  test('the server itself takes the tools and the history with calls and results as the page sends them', async () => {
    const page = await open([sseServer, 4]);
    await page.click('#new-chat');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '8');  // too few for a whole call: the real replies are text
    const sent = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) sent.push(r.postDataJSON());
    });
    // The first reply is canned (a call of add with no id, always allowed since the second test);
    // the next, which carries the call and its result, goes to the real server.
    let canned = 0;
    await page.route('**/v1/chat/completions', (route) => (canned++ ? route.continue() : route.fulfill({
      status: 200, headers: { 'Content-Type': 'text/event-stream' },
      body: callsReply([['', 'calc__add', '{"a": 2, "b": 3}']]),
    })));
    await page.fill('#input', 'Add 2 and 3.');
    await page.press('#input', 'Enter');
    await waitReplies(page, 2);
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[1].tools.map((t) => t.function.name), ['calc__add', 'calc__broken', 'calc__fail', 'calc__slow']);
    assert.deepEqual(sent[1].messages.map((m) => m.role), ['user', 'assistant', 'tool']);
    const id = sent[1].messages[1].tool_calls[0].id;  // the page named the call
    assert.match(id, /^call_./);
    assert.deepEqual(sent[1].messages[2], { role: 'tool', tool_call_id: id, content: '5' });
    assert.equal(await page.locator('.msg.error').count(), 0);
    assert.match(await page.textContent('.turn.assistant >> nth=1 >> .stats'), /^8 tokens/);
    await closeChecked(page);
  });
});
