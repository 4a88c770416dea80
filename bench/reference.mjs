// The Node.js implementation the benchmark measures `loop-brake filter` against:
// the documented dsh-loop-brake semantics written the obvious way (JSON.parse,
// keys sorted at every level, JSON.stringify, crypto sha256), streaming the
// input in 64 KiB chunks and writing the verdicts of each chunk in one write.
// usage: node bench/reference.mjs EVENTS_FILE [MAX_REPEATS=3] > verdicts.jsonl
import { openSync, readSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';

const [file, maxArg = '3'] = process.argv.slice(2);
const maxRepeats = Number(maxArg);

function canonical(value) {
  if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    let out = '{';
    for (let i = 0; i < keys.length; i++) {
      if (i) out += ',';
      out += JSON.stringify(keys[i]) + ':' + canonical(value[keys[i]]);
    }
    return out + '}';
  }
  return JSON.stringify(value);
}

const pick = (obj, keys) => {
  for (const k of keys) if (Object.hasOwn(obj, k) && obj[k] !== null) return obj[k];
  return undefined;
};

const slots = new Map();
let lineNo = 0;

function judge(text, out) {
  lineNo++;
  if (text.endsWith('\r')) text = text.slice(0, -1);
  if (!text.trim()) return;
  const line = lineNo;
  let obj;
  try {
    obj = JSON.parse(text);
  } catch {
    out.push(JSON.stringify({ verdict: 'error', line, error: 'not valid JSON' }));
    return;
  }
  const tool = obj && typeof obj === 'object' ? pick(obj, ['tool', 'toolName', 'name']) : undefined;
  if (typeof tool !== 'string') {
    out.push(JSON.stringify({ verdict: 'error', line, error: 'not a tool call' }));
    return;
  }
  const session = pick(obj, ['sessionId', 'session_id']) ?? pick(obj, ['agentId', 'agent_id']) ?? 'default';
  const callId = pick(obj, ['callId', 'call_id', 'id']);
  const args = pick(obj, ['args', 'arguments', 'input']) ?? {};
  const hash = createHash('sha256').update(tool + '\n' + canonical(args)).digest('hex');
  let slot = slots.get(session);
  let duplicate = false;
  if (slot === undefined) {
    slot = { hash, count: 1, callId, tool };
    slots.set(session, slot);
  } else if (callId !== undefined && callId === slot.callId) {
    duplicate = true;
  } else {
    slot.count = slot.hash === hash ? slot.count + 1 : 1;
    slot.hash = hash;
    slot.callId = callId;
    slot.tool = tool;
  }
  const prefix = slot.hash.slice(0, 12);
  const v = { verdict: slot.count >= maxRepeats ? 'deny' : 'pass', line, toolName: slot.tool, sessionId: session };
  if (callId !== undefined) v.callId = callId;
  v.count = slot.count;
  v.maxRepeats = maxRepeats;
  v.hashPrefix = prefix;
  if (duplicate) v.duplicate = true;
  if (v.verdict === 'deny') {
    v.code = 'LOOP_BRAKE';
    v.plugin = 'dsh-loop-brake';
    v.message =
      `loop brake: tool ${JSON.stringify(slot.tool)} called ${slot.count} times in a row with identical ` +
      `arguments (call ${prefix}\u2026, limit ${maxRepeats}); the call was denied before it ran.\n` +
      'Change the arguments, call a different tool, or stop.';
  }
  out.push(JSON.stringify(v));
}

const fd = openSync(file, 'r');
const buf = Buffer.allocUnsafe(1 << 16);
const decoder = new StringDecoder('utf8');
let pending = '';
let first = true;
for (;;) {
  const n = readSync(fd, buf, 0, buf.length, null);
  if (n === 0) break;
  let text = pending + decoder.write(buf.subarray(0, n));
  if (first) {
    first = false;
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  }
  const parts = text.split('\n');
  pending = parts.pop();
  const out = [];
  for (const part of parts) judge(part, out);
  if (out.length) writeSync(1, out.join('\n') + '\n');
}
pending += decoder.end();
if (pending) {
  const out = [];
  judge(pending, out);
  if (out.length) writeSync(1, out.join('\n') + '\n');
}
