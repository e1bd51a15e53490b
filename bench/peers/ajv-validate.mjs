// A JSON-Schema validator built on ajv 8 (Draft 2020-12) + ajv-formats,
// doing the checks `aep validate` does, for a throughput and memory
// comparison (see README.md). Usage:
//
//   node ajv-validate.mjs SCHEMAS_DIR FILE.jsonl
//
// Per line: JSON.parse, the envelope schema, the payload schema its type
// selects in registry/types.json, unregistered core types, reserved types,
// and the capture rule (a `data` member whose `x-aep-capture` is above the
// event's capture level, nested objects included). Stream rules, as the
// state projection folds them: dedupe on (source, id) with a fingerprint of
// the canonical JSON form (identical redelivery: warning; different event:
// id-collision), seq and epoch regressions per (source, session), one
// terminal per run and per session, session.ended with pending attention,
// one ack per (source, cause). Form-answer checks (AEP-0006) are left out.
// Prints one `LINE level[rule]` per finding and a summary on stderr.
import { readFileSync, readdirSync, createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { createHash } from "node:crypto";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [schemasDir, file] = process.argv.slice(2);
if (!schemasDir || !file) {
  console.error("usage: node ajv-validate.mjs SCHEMAS_DIR FILE.jsonl");
  process.exit(2);
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addKeyword({ keyword: "x-aep-capture", schemaType: "string" });
const read = (p) => JSON.parse(readFileSync(p, "utf8"));
ajv.addSchema(read(join(schemasDir, "common.schema.json")));
const envelopeSchema = read(join(schemasDir, "aep-event.schema.json"));
const envelope = ajv.compile(envelopeSchema);
const registry = read(join(schemasDir, "registry/types.json")).types;
const payloadSchemas = new Map();
for (const name of readdirSync(join(schemasDir, "types"))) {
  const schema = read(join(schemasDir, "types", name));
  ajv.addSchema(schema);
  payloadSchemas.set(name, schema);
}
const byType = new Map();
for (const row of registry) {
  byType.set(row.type, {
    status: row.status,
    validate: row.schema ? ajv.getSchema(payloadSchemas.get(row.schema).$id) : null,
    schema: row.schema ? payloadSchemas.get(row.schema) : null,
  });
}
const CORE = new Set(["agent", "session", "run", "progress", "tool", "delegation", "attention",
  "resource", "error", "state", "assessment", "message", "control"]);
const CAPTURE = { none: 0, metadata: 1, redacted: 2, full: 3 };
const TERMINAL = new Set(["run.finished", "run.failed", "run.cancelled"]);
const COMMANDS = new Set(["control.attention.respond", "control.cancel", "control.pause", "control.resume"]);
const isCommand = (t) => COMMANDS.has(t) || /^x\.[a-z0-9_-]+\.control\./.test(t);

function resolve(schema) {
  if (schema && schema.$ref) {
    const [, pointer] = schema.$ref.split("#/$defs/");
    return ajv.getSchema("aep://schemas/0.1/common.schema.json").schema.$defs[pointer];
  }
  return schema;
}

// Members above `level`, under `pointer`, by the schema's x-aep-capture.
function captureFindings(value, schema, level, pointer, out) {
  schema = resolve(schema);
  if (!schema || typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => captureFindings(v, schema.items, level, `${pointer}/${i}`, out));
    return;
  }
  const props = schema.properties || {};
  for (const [key, v] of Object.entries(value)) {
    const sub = resolve(props[key]);
    if (!sub) continue;
    const need = sub["x-aep-capture"];
    if (need && CAPTURE[need] > level) out.push(`${pointer}/${key}`);
    else captureFindings(v, sub, level, `${pointer}/${key}`, out);
  }
}

function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
const fingerprint = (event) => createHash("sha1").update(canonical(event)).digest("base64");

const seen = new Map(); // source \0 id -> fingerprint
const sessions = new Map(); // source \0 session -> state
const acks = new Set();
let lines = 0, events = 0, errors = 0, warnings = 0;
const out = [];
const report = (line, level, rule) => {
  if (level === "error") errors++; else warnings++;
  out.push(`${line} ${level}[${rule}]`);
  if (out.length > 4096) { process.stdout.write(out.join("\n") + "\n"); out.length = 0; }
};

const input = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
for await (const text of input) {
  const line = ++lines;
  if (text.trim() === "") { report(line, "error", "json"); continue; }
  let event;
  try { event = JSON.parse(text); } catch { report(line, "error", "json"); continue; }
  if (typeof event !== "object" || event === null || Array.isArray(event)) { report(line, "error", "envelope"); continue; }
  if (typeof event.aep === "string" && !event.aep.startsWith("0.")) continue;
  if (!envelope(event)) { report(line, "error", "envelope"); continue; }
  events++;
  const key = `${event.source}\0${event.id}`;
  const print = fingerprint(event);
  const first = seen.get(key);
  if (first === print) { report(line, "warning", "duplicate"); continue; }
  const collision = first !== undefined;
  if (!collision) seen.set(key, print);
  // The event alone.
  const entry = byType.get(event.type);
  if (entry) {
    if (entry.status === "reserved") report(line, "warning", "reserved-type");
    if (entry.validate && event.data !== undefined && !entry.validate(event.data)) report(line, "error", "payload");
    if (entry.schema && event.data) {
      const found = [];
      captureFindings(event.data, entry.schema, CAPTURE[event.capture ?? "metadata"], "/data", found);
      for (const _ of found) report(line, "error", "capture");
    }
  } else if (CORE.has(event.type.split(".")[0]) && event.type.split(".")[0] !== "x") {
    report(line, "error", "unregistered-type");
  }
  if (collision) { report(line, "error", "id-collision"); continue; }
  if (isCommand(event.type) || event.type.startsWith("agent.") || event.session === undefined) {
    ackCheck(event, line);
    continue;
  }
  const skey = `${event.source}\0${event.session}`;
  let s = sessions.get(skey);
  if (!s) { s = { runs: new Map(), pending: new Set(), ended: false, epoch: -1, seq: -1 }; sessions.set(skey, s); }
  if (event.run !== undefined) {
    if (event.type === "run.started" && !s.runs.has(event.run)) s.runs.set(event.run, "running");
    if (TERMINAL.has(event.type)) {
      const status = s.runs.get(event.run);
      if (status !== undefined && status !== "running") report(line, "error", "run-terminal-exclusivity");
      else s.runs.set(event.run, event.type);
    }
  }
  if (event.type === "attention.requested") s.pending.add(event.id);
  else if ((event.type === "attention.resolved" || event.type === "attention.timeout") && event.subject !== undefined) s.pending.delete(event.subject);
  if (event.type === "session.ended") {
    if (s.pending.size > 0) report(line, "error", "ended-with-pending-attention");
    if (s.ended) report(line, "error", "session-terminal-exclusivity");
    s.ended = true;
  }
  if (event.seq !== undefined) {
    const epoch = event.epoch ?? 0;
    if (s.seq >= 0) {
      if (epoch < s.epoch) report(line, "error", "epoch-regression");
      else if (epoch === s.epoch && event.seq <= s.seq) report(line, "error", "seq-regression");
    }
    s.epoch = epoch; s.seq = event.seq;
  }
  ackCheck(event, line);
}

function ackCheck(event, line) {
  if ((event.type === "control.accepted" || event.type === "control.rejected") && event.cause !== undefined) {
    const k = `${event.source}\0${event.cause}`;
    if (acks.has(k)) report(line, "error", "ack-exclusivity"); else acks.add(k);
  }
}

process.stdout.write(out.length ? out.join("\n") + "\n" : "");
console.error(`ajv-validate: ${lines} lines, ${events} events: ${errors} errors, ${warnings} warnings`);
process.exit(errors > 0 ? 1 : 0);
