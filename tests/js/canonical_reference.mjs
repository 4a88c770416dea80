// Batch runner for canonical.mjs, so a test starts Node once for thousands of documents.
// stdin: a JSON array of {"tool": string, "raw": string (JSON text), ...}.
// stdout: the same array, each item with "canonical" and "hash" added, or "error"
// when JSON.parse rejects the raw text. Other fields are passed through.
import { readFileSync } from 'node:fs';
import { callHash, canonicalJson } from './canonical.mjs';

const items = JSON.parse(readFileSync(0, 'utf8'));
const out = items.map(({ tool, raw, canonical, hash, error, ...rest }) => {
  try {
    const args = JSON.parse(raw);
    return { ...rest, tool, raw, canonical: canonicalJson(args), hash: callHash(tool, args) };
  } catch (e) {
    return { ...rest, tool, raw, error: e.name };
  }
});
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
