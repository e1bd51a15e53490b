// The SSE parser, against a plain reference (a regex per line, the text
// re-cut after each: the parser as it was), on random streams cut into
// random chunks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from '../../ui/js/sse.js';

class Reference {
  constructor() {
    this.buffer = '';
    this.reset();
  }

  reset() {
    this.data = null;
    this.event = '';
    this.id = null;
  }

  push(chunk) {
    this.buffer += chunk;
    const out = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      if (match[0] === '\r' && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line, out);
    }
    return out;
  }

  line(line, out) {
    if (line === '') {
      if (this.data !== null) out.push({ kind: 'message', event: this.event || 'message', data: this.data, id: this.id });
      this.reset();
      return;
    }
    if (line.startsWith(':')) {
      out.push({ kind: 'comment', text: line.slice(1).replace(/^ /, '') });
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') this.data = this.data === null ? value : `${this.data}\n${value}`;
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}

let seed = 11;
const rand = (n) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return Math.floor((seed / 4294967296) * n);
};

const LINES = [
  'data: {"a":1}',
  'data:{"a":2}',
  'data:  two spaces',
  'data',
  'data:',
  'data: ',
  'data: é 数据 ошибка 🚀',
  'data: a: b: c',
  'event: tool.requested',
  'event:',
  'event',
  'id: s1:0:17',
  'id: with\0nul',
  'id',
  'retry: 1000',
  'retry',
  ': ping',
  ':',
  ':  two',
  ':no space',
  ': replay-exhausted "a b" 0:3',
  'unknown: value',
  'x',
  ' data: leading space',
  'data\t: tab',
  '',
  '',
  '',
];
const ENDINGS = ['\n', '\n', '\r\n', '\r'];

function stream() {
  let text = rand(10) === 0 ? '\ufeff' : '';
  for (let n = rand(60); n > 0; n -= 1) text += LINES[rand(LINES.length)] + ENDINGS[rand(ENDINGS.length)];
  // Sometimes an unfinished last line, or a lone CR at the end.
  if (rand(3) === 0) text += ['data: partial', '\r', 'data: x\r', ':c'][rand(4)];
  return text;
}

function run(Parser, chunks) {
  const parser = new Parser();
  const out = [];
  for (const chunk of chunks) out.push(...parser.push(chunk));
  return out;
}

/** `text` cut at random places: in a CRLF, in a surrogate pair, anywhere. */
function cutText(text) {
  const chunks = [];
  let at = 0;
  while (at < text.length) {
    const size = rand(4) === 0 ? 0 : 1 + rand(rand(2) ? 4 : 40);
    chunks.push(text.slice(at, at + size));
    at += size;
  }
  return chunks;
}

/** `text`'s UTF-8 bytes cut at random places (inside characters too),
 * decoded as the page does. */
function cutBytes(text) {
  const bytes = new TextEncoder().encode(text);
  const decoder = new TextDecoder('utf-8');
  const chunks = [];
  let at = 0;
  while (at < bytes.length) {
    const size = 1 + rand(rand(2) ? 3 : 50);
    chunks.push(decoder.decode(bytes.subarray(at, at + size), { stream: true }));
    at += size;
  }
  chunks.push(decoder.decode());
  return chunks;
}

test('the parser reads what the reference reads, however the stream is cut', () => {
  for (let i = 0; i < 3000; i += 1) {
    const text = stream();
    const whole = run(Reference, [text]);
    assert.deepEqual(run(SseParser, [text]), whole, JSON.stringify(text));
    const chunks = cutText(text);
    assert.deepEqual(run(SseParser, chunks), whole, JSON.stringify(chunks));
    const decoded = cutBytes(text);
    assert.deepEqual(run(SseParser, decoded), run(Reference, decoded), JSON.stringify(decoded));
  }
});

test('the relay frames, one character at a time and whole', () => {
  const text = 'event: progress.status\ndata: {"m":"é🚀"}\nid: s:0:1\n\n: ping\n\ndata: a\r\ndata: b\r\rdata: c\r\n\r\n';
  const expected = [
    { kind: 'message', event: 'progress.status', data: '{"m":"é🚀"}', id: 's:0:1' },
    { kind: 'comment', text: 'ping' },
    { kind: 'message', event: 'message', data: 'a\nb', id: null },
    { kind: 'message', event: 'message', data: 'c', id: null },
  ];
  assert.deepEqual(run(SseParser, [text]), expected);
  assert.deepEqual(run(SseParser, [...text]), expected);
  assert.deepEqual(run(Reference, [...text]), expected);
});
