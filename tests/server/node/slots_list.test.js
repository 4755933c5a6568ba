// GET /slots behind --slots, and the KV memory lines of /metrics.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { metrics, postJson, skipReason, startServer } from './helpers.js';

describe('GET /slots and KV memory metrics', { skip: skipReason }, () => {
  let on;
  let off;
  before(async () => {
    [on, off] = await Promise.all([startServer(['-np', '2', '--slots']), startServer(['-np', '2'])]);
  });
  after(async () => {
    assert.equal((await on.stop()).code, 0);
    assert.equal((await off.stop()).code, 0);
  });

  test('off by default: 501 naming --slots', async () => {
    const res = await fetch(`${off.url}/slots`);
    assert.equal(res.status, 501);
    const body = await res.json();
    assert.match(body.error.message, /--slots/);
  });

  test('--slots: each slot idle with its context, then busy with a request', async () => {
    let res = await fetch(`${on.url}/slots`);
    assert.equal(res.status, 200);
    let slots = await res.json();
    assert.equal(slots.length, 2);
    assert.deepEqual(slots.map((s) => s.id), [0, 1]);
    for (const s of slots) {
      assert.equal(s.is_processing, false);
      assert.equal(s.id_task, -1);
      assert.ok(s.n_ctx > 0);
    }
    // A long request: the slot it runs in shows it while it runs.
    const pending = postJson(`${on.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 400, temperature: 0 });
    let busy = null;
    for (let i = 0; i < 200 && busy === null; i++) {
      slots = await (await fetch(`${on.url}/slots`)).json();
      busy = slots.find((s) => s.is_processing && s.n_decoded > 0) ?? null;
      if (busy === null) await new Promise((r) => setTimeout(r, 5));
    }
    const done = await pending;
    assert.equal(done.status, 200, done.text);
    assert.ok(busy, 'a slot was seen busy');
    assert.ok(busy.id_task >= 0);
    assert.ok(busy.n_prompt_tokens > 0);
    assert.ok(busy.n_cached > 0);
  });

  test('/metrics: KV bytes in use and bytes per cached position by cell type', async () => {
    const m = await metrics(on.url);
    assert.match(m.text, /# TYPE minfer_kv_bytes_used gauge/);
    assert.match(m.text, /minfer_kv_bytes_per_position\{model_name="[^"]+",cell_type="(f32|f16|q8_0)"\} \d+/);
    assert.ok(m.get('minfer_kv_bytes_per_position') > 0);
    assert.ok(m.get('minfer_kv_bytes_total') >= m.get('minfer_kv_bytes_used'));
    assert.equal(typeof m.get('minfer_kv_bytes_used'), 'number');
  });
});
