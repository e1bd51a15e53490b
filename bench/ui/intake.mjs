// How long the page takes to take events in, under Node: the page's own
// modules (aep-relay/ui/js/) as they are in the work tree ("new") against
// the same modules at a git revision ("old"), in the same process,
// alternating, the median of the passes. Not a test; nothing runs it.
//
//   node bench/ui/intake.mjs [--old REV] [--events N] [--passes P] [--only STAGE]
//
// REV defaults to HEAD (what the work tree changes). The events are
// generated here: sessions interleaved, mixed types, members in the order
// the Rust `Event` type writes them (declaration order, not sorted), some
// strings with escapes and non-ASCII text. Stages, in ms per pass:
//   fingerprint  the dedupe fingerprint of every parsed event
//   sse          the SSE parser over the whole stream text (the relay's
//                frames: `event:`, `data:`, `id:`, and `: ping`
//                comments), in chunks of 64 KiB and of 1 MiB of bytes,
//                decoded beforehand as the page does (TextDecoder, stream)
//   intake       what the page does per chunk: parse the SSE, then per
//                message the stream's position keeping (EventStream
//                .deliver), the fold (Fleet.ingest) and the command tracker

import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const REV = opt('--old', 'HEAD');
const EVENTS = Number(opt('--events', 100_000));
const PASSES = Number(opt('--passes', 7));
const ONLY = opt('--only', ''); // run only the stages whose name starts so

const root = fileURLToPath(new URL('../../', import.meta.url));
const oldDir = mkdtempSync(join(tmpdir(), 'aep-ui-old-'));
execSync(`git archive ${JSON.stringify(REV)} aep-relay/ui/js | tar -x -C ${JSON.stringify(oldDir)}`, { cwd: root });
process.on('exit', () => rmSync(oldDir, { recursive: true, force: true }));

async function load(dir) {
  const at = (f) => import(pathToFileURL(join(dir, 'aep-relay/ui/js', f)).href);
  return { projection: await at('projection.js'), sse: await at('sse.js'), stream: await at('stream.js'), command: await at('command.js') };
}
const sides = { old: await load(oldDir), new: await load(root) };

// ---- the events ----

// A fixed pseudo-random sequence: the same events every run.
let seed = 42;
const rand = () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 4294967296;
};
const pick = (list) => list[Math.floor(rand() * list.length)];

const WORDS = ['build', 'test', 'the', 'relay', 'session', 'src/main.rs', 'cargo', 'passed', 'failed', 'warning', 'fix', 'request'];
// Now and then a word JSON escapes, or one outside ASCII.
const ODD = ['café', 'naïve', '数据', 'ошибка', '🚀', 'C:\\tmp', '"quoted"', 'tab\there'];
const phrase = (n) => Array.from({ length: n }, () => (rand() < 0.02 ? pick(ODD) : pick(WORDS))).join(' ');

/** An event, its members in the Rust `Event`'s declaration order. */
function event(s, type, extra) {
  s.seq += 1;
  s.n += 1;
  const e = { aep: '0.1', id: `${s.name}-${s.n}`, type };
  if (extra.subject) e.subject = extra.subject;
  e.time = new Date(1_796_000_000_000 + s.seq * 137).toISOString();
  e.source = `urn:agent:${s.name}`;
  e.agent = s.agent;
  e.session = s.name;
  if (s.run) e.run = s.run;
  e.seq = s.seq;
  if (extra.cause) e.cause = extra.cause;
  if (extra.severity) e.severity = extra.severity;
  e.capture = 'full';
  e.data = extra.data ?? {};
  return e;
}

function* events(count) {
  const sessions = Array.from({ length: 300 }, (_, i) => ({ name: `s${i}`, agent: pick(['claude-code', 'codex', 'aider']), seq: -1, n: 0, run: null, calls: [], asks: [] }));
  let made = 0;
  while (made < count) {
    const s = pick(sessions);
    let e;
    if (s.n === 0) e = event(s, 'session.started', { data: { label: phrase(3) } });
    else if (!s.run) {
      s.run = `run-${s.n}`;
      e = event(s, 'run.started', { data: { prompt: phrase(8) } });
    } else if (s.calls.length && rand() < 0.4) {
      const call = s.calls.shift();
      e = event(s, 'tool.completed', { cause: call.id, data: { tool: { name: call.name, call_id: call.call }, output: `${phrase(4)}\n` } });
    } else if (s.asks.length && rand() < 0.5) {
      const ask = s.asks.shift();
      e = event(s, pick(['attention.answered', 'attention.resolved']), { subject: ask, data: { answer: { choice: 'yes' } } });
    } else {
      const r = rand();
      if (r < 0.5) e = event(s, 'progress.status', { data: { message: phrase(4) } });
      else if (r < 0.8) {
        const name = pick(['Bash', 'Read', 'Edit', 'Grep']);
        e = event(s, 'tool.requested', { data: { tool: { name, call_id: `c${s.n}`, input: { command: phrase(3), timeout: 120000 } } } });
        s.calls.push({ id: e.id, name, call: `c${s.n}` });
      } else if (r < 0.9) e = event(s, 'progress.task.planned', { data: { tasks: [{ title: phrase(3), status: 'pending' }, { title: phrase(2), status: 'in_progress' }] } });
      else if (r < 0.95) e = event(s, 'error.raised', { severity: 'warning', data: { message: phrase(8), code: 'E_TOOL' } });
      else if (r < 0.98) {
        e = event(s, 'attention.requested', { data: { kind: 'approval', prompt: phrase(10), options: [{ id: 'yes' }, { id: 'no' }] } });
        s.asks.push(e.id);
      } else {
        e = event(s, 'run.finished', { data: { usage: { input_tokens: 1234, output_tokens: 567, cost: 0.0123 } } });
        s.run = null;
      }
    }
    made += 1;
    yield e;
  }
}

const parsed = [...events(EVENTS)];
const lines = parsed.map((e) => JSON.stringify(e));
// The stream the relay writes: its frames, and a ping now and then.
const frames = [];
for (let i = 0; i < parsed.length; i += 1) {
  const e = parsed[i];
  frames.push(`event: ${e.type}\ndata: ${lines[i]}\nid: ${e.session}:0:${e.seq}\n\n`);
  if (i % 5000 === 4999) frames.push(': ping\n\n');
}
const bytes = Buffer.from(frames.join(''), 'utf8');

/** The stream's bytes in chunks of `size`, decoded as the page does. */
function chunks(size) {
  const decoder = new TextDecoder('utf-8');
  const out = [];
  for (let at = 0; at < bytes.length; at += size) out.push(decoder.decode(bytes.subarray(at, at + size), { stream: true }));
  return out;
}
const chunked = { '64k': chunks(64 << 10), '1m': chunks(1 << 20) };

// ---- the stages ----

// The old fingerprint: the canonical text, then its hash (cyrb53).
function cyrb53(text) {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
const fingerprintOf = (m) => m.projection.fingerprint ?? ((e) => cyrb53(m.projection.canonical(e)));

let sink = 0;
const stages = {
  fingerprint(m) {
    const fp = fingerprintOf(m);
    for (const e of parsed) sink += fp(e);
  },
  'sse 64k': (m) => parse(m, chunked['64k']),
  'sse 1m': (m) => parse(m, chunked['1m']),
  'intake 64k': (m) => intake(m, chunked['64k']),
  'intake 1m': (m) => intake(m, chunked['1m']),
};

function parse(m, texts) {
  const parser = new m.sse.SseParser();
  let n = 0;
  for (const text of texts) n += parser.push(text).length;
  sink += n;
  return n;
}

function intake(m, texts) {
  const fleet = new m.projection.Fleet();
  const tracker = new m.command.Tracker();
  let fresh = 0;
  const stream = new m.stream.EventStream(null, {
    event(text) {
      const result = fleet.ingest(text);
      if (result.status !== 'new') return;
      fresh += 1;
      tracker.onEvent(result.event);
    },
    state() {},
    notice() {},
  });
  const parser = new m.sse.SseParser();
  for (const text of texts) {
    for (const message of parser.push(text)) {
      if (message.kind === 'comment') stream.comment(message.text);
      else stream.deliver(message, false);
    }
  }
  sink += fresh;
  return fresh;
}

// Both sides must agree before they are timed.
const fpOld = fingerprintOf(sides.old);
const fpNew = fingerprintOf(sides.new);
for (const e of parsed) if (fpOld(e) !== fpNew(e)) throw new Error(`the fingerprints differ on ${JSON.stringify(e)}`);
for (const c of Object.values(chunked)) {
  const a = [];
  const b = [];
  const po = new sides.old.sse.SseParser();
  const pn = new sides.new.sse.SseParser();
  for (const t of c) {
    a.push(...po.push(t));
    b.push(...pn.push(t));
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the SSE parsers differ');
  if (intake(sides.old, c) !== EVENTS || intake(sides.new, c) !== EVENTS) throw new Error('not every event was taken in');
}

console.log(`${EVENTS} events, ${(bytes.length / 1e6).toFixed(1)} MB of stream; old = ${REV}, new = the work tree; ${PASSES} passes each, alternating; node ${process.version}`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, run] of Object.entries(stages)) {
  if (!name.startsWith(ONLY)) continue;
  const times = { old: [], new: [] };
  run(sides.old); // warm both up
  run(sides.new);
  for (let p = 0; p < PASSES; p += 1) {
    for (const side of p % 2 ? ['new', 'old'] : ['old', 'new']) {
      const t = performance.now();
      run(sides[side]);
      times[side].push(performance.now() - t);
    }
  }
  const o = median(times.old);
  const n = median(times.new);
  const all = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
  console.log(`${name.padEnd(12)} old ${o.toFixed(0).padStart(5)} ms   new ${n.toFixed(0).padStart(5)} ms   (${((n / o) * 100).toFixed(0)}%)   old: ${all(times.old)} | new: ${all(times.new)}`);
}
if (sink === 0.5) console.log(sink);
