// The chat page at / in Debian's headless chromium (playwright-core): type a message, see a
// streamed reply with its tok/s, press stop mid-reply; model text never becomes markup.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { browserSkip, launchBrowser } from './chat_page_browser.js';
import { metrics, skipReason, startServer, waitFor } from './helpers.js';

const skip = skipReason || browserSkip;

describe('chat page', { skip }, () => {
  let server;
  let launched;
  let browser;
  before(async () => {
    server = await startServer(['-np', '2']);
    launched = await launchBrowser();
    browser = launched.context;
  });
  after(async () => {
    if (launched) await launched.close();
    assert.equal((await server.stop()).code, 0);
  });

  test('a message gets a streamed reply with tok/s', async () => {
    const page = await browser.newPage();
    await page.goto(server.url + '/');
    assert.equal(await page.title(), 'minfer chat');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '40');
    await page.fill('#input', 'Hello there!');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant[data-done="true"]', { timeout: 20000 });
    const user = await page.textContent('.msg.user');
    assert.equal(user, 'Hello there!');
    const stats = await page.textContent('.msg.assistant .stats');
    assert.match(stats, /^40 tokens, [0-9.]+ tok\/s/);
    const reply = await page.textContent('.msg.assistant .content');
    assert.ok(reply.length > 0);
    await page.close();
  });

  test('stop ends a long reply mid-stream and frees the server', async () => {
    const page = await browser.newPage();
    await page.goto(server.url + '/');
    await page.fill('#max-tokens', '3500');
    await page.fill('#input', 'Tell me everything.');
    await page.click('#send');
    await page.waitForFunction(() => {
      const c = document.querySelector('.msg.assistant .content');
      return c && c.textContent.length > 20;
    }, null, { timeout: 20000 });
    assert.equal(await page.isEnabled('#stop'), true);
    await page.click('#stop');
    await page.waitForSelector('.msg.assistant[data-stopped="true"]', { timeout: 5000 });
    const tokens = Number(await page.getAttribute('.msg.assistant .stats', 'data-tokens'));
    assert.ok(tokens > 0 && tokens < 3500, `stopped after ${tokens} tokens`);
    assert.equal(await page.isEnabled('#send'), true);
    assert.ok(await waitFor(async () => {
      const m = await metrics(server.url);
      return m.get('vllm:num_requests_running') === 0 && m.get('minfer_kv_blocks_used') === 0;
    }), 'the request was cancelled on the server');
    await page.close();
  });

  test('model output is escaped before markdown: no injected markup', async () => {
    const page = await browser.newPage();
    await page.goto(server.url + '/');
    const html = await page.evaluate(() => renderMarkdown(
      '<script>window.pwned=1</script> <img src=x onerror="window.pwned=1"> **bold** `code` ' +
      '[x](javascript:alert(1)) [ok](https://example.com/"onmouseover="x)\n```\n<b>in code</b>\n```'));
    const parsed = await page.evaluate((h) => {
      const d = document.createElement('div');
      d.innerHTML = h;
      return {
        scripts: d.querySelectorAll('script').length,
        imgs: d.querySelectorAll('img').length,
        bolds: d.querySelectorAll('b').length,
        strong: d.querySelectorAll('strong').length,
        links: [...d.querySelectorAll('a')].map((a) => [a.getAttribute('href'), a.getAttributeNames().join(',')]),
      };
    }, html);
    assert.equal(parsed.scripts, 0);
    assert.equal(parsed.imgs, 0);
    assert.equal(parsed.bolds, 0);
    assert.equal(parsed.strong, 1);
    for (const [href, attrs] of parsed.links) {
      assert.match(href, /^https:\/\//);
      assert.equal(attrs, 'href,rel,target');
    }
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    await page.close();
  });
});
