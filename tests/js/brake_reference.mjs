// Reference for `loop-brake filter`, written from the documented semantics only.
// usage: node brake_reference.mjs EVENTS_FILE MAX_REPEATS  -> one JSON verdict per event
//
// Events: one JSON object per line (UTF-8; a leading BOM, CRLF and blank lines
// allowed). Aliases: tool|toolName|name, args|arguments|input (missing = {}),
// sessionId|session_id, agentId|agent_id, callId|call_id|id; null means absent.
// Session key = sessionId ?? agentId ?? "default" (so "" is a session of its own).
// Per session one slot {hash, count, callId, tool}: same hash -> count + 1, else 1;
// denied when count >= maxRepeats. A call whose callId equals the slot's callId is a
// duplicate: not counted, reported with the slot's verdict, tool and hash.
import { readFileSync } from 'node:fs';
import { callHash } from './canonical.mjs';

const [file, maxArg] = process.argv.slice(2);
const maxRepeats = Number(maxArg);
const pick = (obj, keys) => {
  for (const k of keys) if (Object.hasOwn(obj, k) && obj[k] !== null) return obj[k];
  return undefined;
};
const isCallId = (v) =>
  typeof v === 'string' || (Number.isInteger(v) && Math.abs(v) <= 2 ** 53);

let bytes = readFileSync(file);
if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
const decoder = new TextDecoder('utf-8', { fatal: true });
const slots = new Map();
const out = [];
let start = 0;
for (let line = 1; start < bytes.length; line++) {
  let end = bytes.indexOf(0x0a, start);
  if (end < 0) end = bytes.length;
  let raw = bytes.subarray(start, end);
  start = end + 1;
  if (raw.at(-1) === 0x0d) raw = raw.subarray(0, -1);
  const error = (what) => out.push({ verdict: 'error', line, error: what });
  let text;
  try {
    text = decoder.decode(raw);
  } catch {
    error('utf-8');
    continue;
  }
  if (/^[ \t\r\n]*$/.test(text)) continue;
  let obj;
  try {
    obj = JSON.parse(text);
  } catch {
    error('json');
    continue;
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) { error('object'); continue; }
  const tool = pick(obj, ['tool', 'toolName', 'name']);
  if (typeof tool !== 'string') { error('tool'); continue; }
  const sessionId = pick(obj, ['sessionId', 'session_id']);
  const agentId = pick(obj, ['agentId', 'agent_id']);
  if (sessionId !== undefined && typeof sessionId !== 'string') { error('sessionId'); continue; }
  if (agentId !== undefined && typeof agentId !== 'string') { error('agentId'); continue; }
  const callId = pick(obj, ['callId', 'call_id', 'id']);
  if (callId !== undefined && !isCallId(callId)) { error('callId'); continue; }
  const args = pick(obj, ['args', 'arguments', 'input']) ?? {};
  const hash = callHash(tool, args);
  const session = sessionId ?? agentId ?? 'default';
  let slot = slots.get(session);
  let duplicate = false;
  if (slot === undefined) {
    slot = { hash, count: 1, callId, tool };
    slots.set(session, slot);
  } else if (callId !== undefined && callId === slot.callId) {
    duplicate = true;
  } else {
    slot.count = slot.hash === hash ? slot.count + 1 : 1;
    Object.assign(slot, { hash, callId, tool });
  }
  const verdict = {
    verdict: slot.count >= maxRepeats ? 'deny' : 'pass',
    line,
    toolName: slot.tool,
    sessionId: session,
    count: slot.count,
    maxRepeats,
    hashPrefix: slot.hash.slice(0, 12),
  };
  if (callId !== undefined) verdict.callId = callId;
  if (duplicate) verdict.duplicate = true;
  out.push(verdict);
}
process.stdout.write(out.map((v) => JSON.stringify(v) + '\n').join(''));
