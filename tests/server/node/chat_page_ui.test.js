// The chat page's conversations, rendering and API key in Debian's headless chromium
// (playwright-core) against real `minfer serve` processes: conversations in localStorage survive
// a reload and can be switched, renamed, deleted, exported and imported; a user message can be
// edited and a reply regenerated. Model output is rendered from canned SSE streams (playwright's
// page.route answers /v1/chat/completions; the tiny test model writes random text): tables,
// lists, highlighted code, math with KaTeX's embedded fonts, reasoning, tool calls, usage; and
// tags in it stay text. The page requests nothing but its own server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { browserSkip, launchBrowser, sse } from './chat_page_browser.js';
import { skipReason, startServer } from './helpers.js';

const skip = skipReason || browserSkip;

// A browser and a server (extra serve flags) for one describe(); `ctx.page()` opens a page at /
// that records every request it makes (page.requests) and every script error (page.errors).
function suite(serveArgs) {
  const ctx = { server: null, browser: null };
  let launched;
  before(async () => {
    ctx.server = await startServer(serveArgs);
    launched = await launchBrowser();
    ctx.browser = launched.context;
  });
  after(async () => {
    if (launched) await launched.close();
    assert.equal((await ctx.server.stop()).code, 0);
  });
  ctx.page = async () => {
    const page = await ctx.browser.newPage();
    page.requests = [];
    page.errors = [];
    page.on('request', (r) => page.requests.push(r.url()));
    page.on('pageerror', (e) => page.errors.push(e.message));
    await page.goto(ctx.server.url + '/');
    return page;
  };
  return ctx;
}

// Closes the page after checking that its scripts threw nothing.
async function closeChecked(page) {
  assert.deepEqual(page.errors, []);
  await page.close();
}

async function sendAndWait(page, text) {
  const before = await page.locator('.msg.assistant[data-done="true"]').count();
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done="true"]').length > n,
    before, { timeout: 20000 });
}

const listTitles = (page) => page.$$eval('#conversations .conv-open', (bs) => bs.map((b) => b.textContent));

describe('chat page: conversations', { skip }, () => {
  const ctx = suite(['-np', '2']);

  test('a conversation survives a reload; switch, rename, delete; settings per conversation', async () => {
    const page = await ctx.page();
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '8');
    await page.fill('#system', 'You are terse.');
    await sendAndWait(page, 'First question');
    const reply = await page.textContent('.msg.assistant .content');
    const stats = await page.textContent('.msg.assistant .stats');
    assert.match(stats,
      /^\d+ tokens, [0-9.-]+ tok\/s, first token [0-9.]+ s, prompt \d+ tokens, \d+ cached, seed \d+( - max tokens reached)?$/);

    await page.reload();
    assert.equal(await page.textContent('.msg.user'), 'First question');
    assert.equal(await page.textContent('.msg.assistant .content'), reply);
    assert.equal(await page.textContent('.msg.assistant .stats'), stats);
    assert.equal(await page.inputValue('#system'), 'You are terse.');
    assert.deepEqual(await listTitles(page), ['First question']);

    // A new conversation keeps the sampling settings but not the system prompt.
    await page.click('#new-chat');
    assert.equal(await page.locator('.turn').count(), 0);
    assert.equal(await page.inputValue('#max-tokens'), '8');
    assert.equal(await page.inputValue('#system'), '');
    await page.fill('#max-tokens', '4');
    await sendAndWait(page, 'Second question');
    assert.deepEqual(await listTitles(page), ['Second question', 'First question']);

    await page.click('#conversations .conv-open >> text=First question');
    assert.equal(await page.textContent('.msg.user'), 'First question');
    assert.equal(await page.inputValue('#max-tokens'), '8');
    assert.equal(await page.inputValue('#system'), 'You are terse.');

    await page.click('.conv:has-text("First question") .conv-rename');
    await page.fill('.conv-title-input', 'Renamed');
    await page.press('.conv-title-input', 'Enter');
    assert.deepEqual(await listTitles(page), ['Second question', 'Renamed']);
    await page.reload();  // this tab still shows the conversation it had
    assert.deepEqual(await listTitles(page), ['Second question', 'Renamed']);
    assert.equal(await page.textContent('.msg.user'), 'First question');
    assert.equal(await page.textContent('#title'), 'Renamed');

    // Delete asks again on the same button.
    await page.click('.conv:has-text("Second question") .conv-delete');
    assert.equal((await listTitles(page)).length, 2);
    await page.click('.conv:has-text("Second question") .conv-delete');
    assert.deepEqual(await listTitles(page), ['Renamed']);
    await page.reload();
    assert.deepEqual(await listTitles(page), ['Renamed']);
    await closeChecked(page);
  });

  test('edit a user message and send from there; regenerate a reply', async () => {
    const page = await ctx.page();
    await page.click('#new-chat');
    await page.fill('#temperature', '1');
    await page.fill('#max-tokens', '6');
    await page.fill('#seed', '');
    await sendAndWait(page, 'Alpha');
    await sendAndWait(page, 'Gamma');
    assert.equal(await page.locator('.turn').count(), 4);

    await page.click('.turn.user >> nth=0 >> .edit');
    await page.fill('.editor textarea', 'Beta');
    await page.click('.editor .save-edit');
    await page.waitForSelector('.msg.assistant[data-done="true"]', { timeout: 20000 });
    assert.deepEqual(await page.$$eval('.msg.user', (ds) => ds.map((d) => d.textContent)), ['Beta']);
    assert.equal(await page.locator('.turn').count(), 2);

    // No seed set: each reply gets its own random seed, which the stats show.
    const seedOf = async () => (await page.textContent('.msg.assistant .stats')).match(/seed (\d+)/)[1];
    const first = await seedOf();
    await page.click('.turn.assistant .regenerate');
    await page.waitForSelector('.msg.assistant[data-done="true"]', { timeout: 20000 });
    assert.equal(await page.locator('.turn').count(), 2);
    assert.notEqual(await seedOf(), first);
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('minfer.chat.conversations')));
    const conv = stored.find((c) => c.title === 'Alpha');
    assert.deepEqual(conv.messages.map((m) => m.role), ['user', 'assistant']);
    assert.equal(conv.messages[0].content, 'Beta');
    await closeChecked(page);
  });

  test('export and import as JSON; a bad file is refused with what is wrong', async () => {
    const page = await ctx.page();
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    const exported = JSON.parse(readFileSync(await download.path(), 'utf8'));
    assert.equal(exported.format, 'minfer-chat');
    const n = exported.conversations.length;
    assert.equal(n, (await listTitles(page)).length);
    assert.ok(n >= 2);

    // The page reads the file asynchronously: wait for the status that names it.
    const importFile = async (name, text) => {
      await page.setInputFiles('#import-file', { name, mimeType: 'application/json', buffer: Buffer.from(text) });
      await page.waitForFunction(n => document.getElementById('import-status').textContent.includes(n), name);
    };
    await importFile('bad.json', JSON.stringify({ conversations: [{ messages: [{ role: 'robot', content: 'x' }] }] }));
    assert.equal(await page.textContent('#import-status'),
      'Import of bad.json failed: conversations[0].messages[0].role: expected \'user\', \'assistant\', ' +
      '\'system\' or \'tool\', got "robot"');
    await importFile('worse.json', '{"conversations": [');
    assert.match(await page.textContent('#import-status'), /^Import of worse\.json failed: not JSON: /);
    await importFile('odd.json', '{"chats": []}');
    assert.match(await page.textContent('#import-status'), /expected \{"conversations": \[\.\.\.\]\}/);
    assert.equal((await listTitles(page)).length, n);

    // The export comes back whole (as copies), and the first imported one is shown.
    await importFile('back.json', JSON.stringify(exported));
    assert.equal(await page.textContent('#import-status'), `Imported ${n} conversations from back.json.`);
    assert.equal((await listTitles(page)).length, 2 * n);
    assert.equal(await page.textContent('#title'), exported.conversations[0].title);
    assert.equal(await page.locator('.turn').count(), exported.conversations[0].messages.length);
    await closeChecked(page);
  });
});

const MARKDOWN = [
  '| name | value |\n|---|---|\n| a | 1 |\n| b | 2 |\n\n',
  '1. one\n   - nested\n   - also\n2. two\n\n',
  '```python\ndef f(x):\n    return x + 1\n```\n\n',
  'Inline $x^2$ and display:\n\n$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$\n',
];

async function routeCanned(page, body) {
  await page.route('**/v1/chat/completions', (route) => route.fulfill({
    status: 200, headers: { 'Content-Type': 'text/event-stream' }, body,
  }));
}

describe('chat page: rendering model output', { skip }, () => {
  const ctx = suite(['-np', '1']);

  test('tables, lists, highlighted code and math render; reasoning folds; tool calls and usage show', async () => {
    const page = await ctx.page();
    const deltas = [{ role: 'assistant', content: '' }, { reasoning_content: 'Let me ' },
      { reasoning_content: 'think.' }];
    for (const part of MARKDOWN) deltas.push({ content: part });
    deltas.push({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] });
    deltas.push({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Oslo"}' } }] });
    await routeCanned(page, sse(deltas,
      { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, prompt_tokens_details: { cached_tokens: 8 }, seed: 42 }));
    await sendAndWait(page, 'Show me markdown');
    const got = await page.evaluate(() => {
      const c = document.querySelector('.msg.assistant .content');
      const r = document.querySelector('.msg.assistant .reasoning');
      return {
        th: [...c.querySelectorAll('table th')].map((e) => e.textContent),
        td: [...c.querySelectorAll('table td')].map((e) => e.textContent),
        ol: c.querySelectorAll('ol > li').length,
        nested: [...c.querySelectorAll('ol > li > ul > li')].map((e) => e.textContent),
        lang: c.querySelector('.code-block .code-lang').textContent,
        keywords: [...c.querySelectorAll('code.language-python .hljs-keyword')].map((e) => e.textContent),
        code: c.querySelector('.code-block code').textContent,
        katex: c.querySelectorAll('.katex').length,
        display: c.querySelectorAll('.katex-display').length,
        reasoning: r.querySelector('.reasoning-text').textContent,
        reasoningShown: !r.hidden,
        reasoningOpen: r.open,
        tool: document.querySelector('.msg.assistant .tool-call .tool-name').textContent,
        args: document.querySelector('.msg.assistant .tool-call .tool-args').textContent,
        stats: document.querySelector('.msg.assistant .stats').textContent,
      };
    });
    assert.deepEqual(got.th, ['name', 'value']);
    assert.deepEqual(got.td, ['a', '1', 'b', '2']);
    assert.equal(got.ol, 2);
    assert.deepEqual(got.nested, ['nested', 'also']);
    assert.equal(got.lang, 'python');
    assert.ok(got.keywords.includes('def') && got.keywords.includes('return'), got.keywords.join());
    assert.equal(got.code, 'def f(x):\n    return x + 1\n');
    assert.equal(got.katex, 2);
    assert.equal(got.display, 1);
    assert.equal(got.reasoning, 'Let me think.');
    assert.equal(got.reasoningShown, true);
    assert.equal(got.reasoningOpen, false);  // folded once the answer started
    assert.equal(got.tool, 'get_weather');
    assert.deepEqual(JSON.parse(got.args), { city: 'Oslo' });
    assert.match(got.stats, /^7 tokens, [0-9.-]+ tok\/s, first token [0-9.]+ s, prompt 12 tokens, 8 cached, seed 42$/);

    // KaTeX's fonts come from the binary too.
    const fonts = await page.evaluate(async () => {
      await document.fonts.ready;
      return [...document.fonts].filter((f) => f.status === 'loaded').map((f) => f.family);
    });
    assert.ok(fonts.some((f) => f.includes('KaTeX_Main')), fonts.join());

    // The code block's copy button.
    await ctx.browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ctx.server.url });
    await page.click('.copy-code');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'def f(x):\n    return x + 1\n');

    // Stored as it streamed: the reload shows the same.
    await page.reload();
    assert.equal(await page.locator('.msg.assistant .content table td').count(), 4);
    assert.equal(await page.textContent('.msg.assistant .reasoning-text'), 'Let me think.');
    for (const url of page.requests) assert.ok(url.startsWith(ctx.server.url + '/'), url);
    await closeChecked(page);
  });

  test('reasoning is open while it streams and folds when the answer starts', async () => {
    const page = await ctx.page();
    const states = await page.evaluate(() => {
      const msg = { role: 'assistant', content: '', reasoning: 'Hmm', tool_calls: [], stats: null };
      const view = addTurn(msg, 0);
      const state = () => [view.reasoning.hidden, view.reasoning.open, view.summary.textContent];
      renderAssistant(msg, view, true);
      const thinking = state();
      msg.content = 'Answer';
      renderAssistant(msg, view, true);
      return [thinking, state()];
    });
    assert.deepEqual(states, [[false, true, 'Thinking\u2026'], [false, false, 'Reasoning']]);
    await closeChecked(page);
  });

  test('tags in model output stay text: no element, no script, no dialog, no request', async () => {
    const page = await ctx.page();
    let dialogs = 0;
    page.on('dialog', (d) => {
      dialogs += 1;
      d.dismiss();
    });
    const evil = '<script>window.pwned=1</script> <img src=x onerror="window.pwned=1;alert(1)"> ' +
      '<b>bold?</b> [x](javascript:alert(1)) ![pic](http://example.com/p.png)\n\n' +
      '<iframe src="http://example.com"></iframe>';
    await routeCanned(page, sse([{ content: evil }],
      { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0 } }));
    await sendAndWait(page, 'Be evil');
    const got = await page.evaluate(() => {
      const c = document.querySelector('.msg.assistant .content');
      return {
        tags: c.querySelectorAll('script, img, b, iframe').length,
        text: c.textContent,
        links: [...c.querySelectorAll('a')].map((a) => a.getAttribute('href')),
        pwned: window.pwned,
      };
    });
    assert.equal(got.tags, 0);
    assert.ok(got.text.includes('<script>window.pwned=1</script>'), got.text);
    assert.ok(got.text.includes('<img src=x onerror='), got.text);
    assert.deepEqual(got.links, ['http://example.com/p.png']);  // an image becomes a link
    assert.equal(got.pwned, undefined);
    await page.waitForTimeout(200);
    assert.equal(dialogs, 0);
    for (const url of page.requests) assert.ok(url.startsWith(ctx.server.url + '/'), url);
    await closeChecked(page);
  });
});

describe('chat page: API key', { skip }, () => {
  const ctx = suite(['-np', '1', '--api-key', 'sekrit']);

  test('the page and its static files are served without the key, with types and ETags', async () => {
    const page = await fetch(ctx.server.url + '/');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy'), /default-src 'self'/);
    const types = {
      '/static/chat.js': 'text/javascript; charset=utf-8',
      '/static/chat.css': 'text/css; charset=utf-8',
      '/static/markdown.js': 'text/javascript; charset=utf-8',
      '/static/markdown-it.js': 'text/javascript; charset=utf-8',
      '/static/highlight.min.js': 'text/javascript; charset=utf-8',
      '/static/katex/katex.min.js': 'text/javascript; charset=utf-8',
      '/static/katex/katex.min.css': 'text/css; charset=utf-8',
      '/static/katex/fonts/KaTeX_Main-Regular.woff2': 'font/woff2',
    };
    for (const [path, type] of Object.entries(types)) {
      const res = await fetch(ctx.server.url + path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), type, path);
      const body = Buffer.from(await res.arrayBuffer());
      if (path.startsWith('/static/katex/fonts/')) {
        assert.equal(body.subarray(0, 4).toString('latin1'), 'wOF2');
        assert.deepEqual(body, readFileSync('/usr/share/javascript/katex/fonts/KaTeX_Main-Regular.woff2'));
      }
      const again = await fetch(ctx.server.url + path, { headers: { 'If-None-Match': res.headers.get('etag') } });
      assert.equal(again.status, 304, path);
    }
    assert.equal((await fetch(ctx.server.url + '/static/nope.js')).status, 404);
  });

  test('asked once on a 401, kept in the browser, sent as a bearer token', async () => {
    const page = await ctx.page();
    // The page and its files load without the key; the model list asks for it.
    await page.waitForSelector('#key-dialog[open]');
    assert.equal(await page.textContent('#key-message'), 'This server needs an API key.');
    await page.fill('#key-input', 'wrong');
    await page.click('#key-save');
    await page.waitForFunction(() => document.querySelector('#key-dialog').open &&
      document.querySelector('#key-message').textContent.includes('refused'));
    await page.fill('#key-input', 'sekrit');
    await page.click('#key-save');
    await page.waitForFunction(() => document.querySelector('#model').textContent.length > 0);
    assert.equal(await page.evaluate(() => localStorage.getItem('minfer.chat.apiKey')), 'sekrit');

    await page.fill('#max-tokens', '4');
    await sendAndWait(page, 'Hello');
    assert.equal(await page.locator('.msg.error').count(), 0);
    assert.match(await page.textContent('.msg.assistant .stats'), /^4 tokens/);

    await page.reload();
    await page.waitForFunction(() => document.querySelector('#model').textContent.length > 0);
    assert.equal(await page.evaluate(() => document.querySelector('#key-dialog').open), false);
    await sendAndWait(page, 'Again');
    assert.equal(await page.locator('.msg.error').count(), 0);

    // Forgotten, it is asked for again; cancelled, the reply says the server refused.
    await page.click('#forget-key');
    await page.fill('#input', 'No key');
    await page.press('#input', 'Enter');
    await page.waitForSelector('#key-dialog[open]');
    await page.click('#key-cancel');
    await page.waitForSelector('.msg.assistant.error[data-done="true"]');
    assert.match(await page.textContent('.msg.assistant.error .content'), /API key/);
    await closeChecked(page);
  });
});
