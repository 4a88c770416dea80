// The call hash, written from the specification only (about a dozen lines):
// canonical JSON = the JSON.parse value with object keys sorted by the default JS
// sort (UTF-16 code units) at every level, written key by key so that "10" stays
// before "2"; everything else exactly as JSON.stringify writes it. The hash is
// sha256 of tool + "\n" + canonical, Node encoding the string as UTF-8 (a lone
// surrogate becomes U+FFFD).
import { createHash } from 'node:crypto';

export function canonicalJson(value) {
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(value[k])).join(',') + '}';
  }
  return JSON.stringify(value);
}

export function callHash(tool, args) {
  return createHash('sha256').update(tool + '\n' + canonicalJson(args)).digest('hex');
}
