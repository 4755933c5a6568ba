'use strict';
// Model text as HTML for the chat page (web/chat.js): markdown by markdown-it with raw HTML off
// (tags in model output stay text), code highlighted by highlight.js, math ($...$, $$...$$, \(...\),
// \[...\]) by KaTeX; links open in a new tab and images become links, so the page loads nothing
// that model output names. Classic script: renderMarkdown() and escapeHtml() are globals.

function escapeHtml(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function renderTex(tex, display) {
  if (!window.katex) return '<code>' + escapeHtml(tex) + '</code>';
  try {
    return window.katex.renderToString(tex, { displayMode: display, throwOnError: false });
  } catch (e) {
    return '<code class="math-error">' + escapeHtml(tex) + '</code>';
  }
}

// Inline math: $...$ (not "$5 and $6": the opening $ comes before a non-space, the closing one
// after a non-space and not before a digit), $$...$$, \(...\) and \[...\].
function mathInline(state, silent) {
  const src = state.src;
  const pos = state.pos;
  const pairs = [['$$', '$$'], ['$', '$'], ['\\(', '\\)'], ['\\[', '\\]']];
  const pair = pairs.find(([open]) => src.startsWith(open, pos));
  if (!pair) return false;
  const [open, close] = pair;
  const start = pos + open.length;
  let end = src.indexOf(close, start);
  while (end > 0 && close === '$' && src[end - 1] === '\\') end = src.indexOf(close, end + 1);
  if (end < 0) return false;
  const tex = src.slice(start, end);
  if (!tex.trim()) return false;
  if (open === '$' && (/\s/.test(tex[0]) || /\s/.test(tex[tex.length - 1]) ||
                       /[0-9]/.test(src[end + 1] || ''))) {
    return false;
  }
  if (!silent) {
    const token = state.push('math_inline', 'math', 0);
    token.content = tex;
    token.markup = open;
  }
  state.pos = end + close.length;
  return true;
}

// Display math: a block that starts with $$ or \[ and ends on a line ending with $$ or \].
function mathBlock(state, startLine, endLine, silent) {
  if (state.sCount[startLine] - state.blkIndent >= 4) return false;
  const lineText = (n) => state.src.slice(state.bMarks[n] + state.tShift[n], state.eMarks[n]);
  const first = lineText(startLine);
  const pair = [['$$', '$$'], ['\\[', '\\]']].find(([open]) => first.startsWith(open));
  if (!pair) return false;
  const [open, close] = pair;
  const parts = [];
  let line = startLine;
  let text = first.slice(open.length);
  for (;;) {
    const at = text.lastIndexOf(close);
    if (at >= 0 && text.slice(at + close.length).trim() === '') {
      parts.push(text.slice(0, at));
      break;
    }
    parts.push(text);
    line += 1;
    if (line >= endLine) return false;  // not closed (yet, while a reply streams)
    text = lineText(line);
  }
  if (silent) return true;
  state.line = line + 1;
  const token = state.push('math_block', 'math', 0);
  token.block = true;
  token.content = parts.join('\n');
  token.map = [startLine, state.line];
  token.markup = open;
  return true;
}

// A fenced code block: highlighted when highlight.js knows its language, with a copy button.
function renderFence(tokens, idx) {
  const token = tokens[idx];
  const lang = (token.info || '').trim().split(/\s+/)[0];
  let body = null;
  if (lang && window.hljs && window.hljs.getLanguage(lang)) {
    try {
      body = window.hljs.highlight(lang, token.content, true).value;
    } catch (e) {
      body = null;
    }
  }
  if (body === null) body = escapeHtml(token.content);
  const label = lang ? '<span class="code-lang">' + escapeHtml(lang) + '</span>' : '<span></span>';
  const cls = 'hljs' + (lang ? ' language-' + escapeHtml(lang) : '');
  return '<div class="code-block"><div class="code-head">' + label +
    '<button type="button" class="copy-code">Copy</button></div><pre><code class="' + cls + '">' +
    body + '</code></pre></div>\n';
}

function makeRenderer() {
  if (!window.markdownit) return null;
  // html: false: tags in model output are text, never markup.
  const md = window.markdownit({ html: false, linkify: false, typographer: false });
  md.inline.ruler.before('escape', 'math_inline', mathInline);
  md.block.ruler.before('fence', 'math_block', mathBlock,
    { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
  md.renderer.rules.math_inline = (tokens, idx) => renderTex(tokens[idx].content, false);
  md.renderer.rules.math_block = (tokens, idx) =>
    '<div class="math-block">' + renderTex(tokens[idx].content, true) + '</div>\n';
  md.renderer.rules.fence = renderFence;
  // Links open in a new tab, without a referrer; markdown-it already refuses javascript: URLs.
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    tokens[idx].attrSet('rel', 'noopener noreferrer');
    tokens[idx].attrSet('target', '_blank');
    return self.renderToken(tokens, idx, options);
  };
  // Images become links: the page loads nothing that model output names.
  md.renderer.rules.image = (tokens, idx, options, env, self) => {
    const src = tokens[idx].attrGet('src') || '';
    const alt = self.renderInlineAsText(tokens[idx].children, options, env) || src;
    return '<a href="' + escapeHtml(src) + '" rel="noopener noreferrer" target="_blank">[image: ' +
      escapeHtml(alt) + ']</a>';
  };
  return md;
}

const markdown = makeRenderer();

// Model text as HTML: markdown, tables, lists, highlighted code, math; never raw markup.
function renderMarkdown(text) {
  if (!markdown) return '<pre>' + escapeHtml(text) + '</pre>';
  return markdown.render(text);
}
