// The audit log's checks, in the browser: RFC 9162 (RFC 6962 hashing) inclusion and consistency
// proofs, C2SP checkpoints and signed notes (Ed25519, by WebCrypto), and witnesses'
// cosignatures. The same rules as services/transparency/, written again from the
// specifications so that a page checks what the server says without trusting the server.
// Every failure throws an Error whose message says which check failed.

const encoder = new TextEncoder();
const ED25519 = 0x01;
const COSIGNATURE = 0x04;
const MARK = "\u2014 ";

function concat(...parts) {
  const length = parts.reduce((sum, part) => sum + part.length, 0);
  const joined = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  return joined;
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

function equal(a, b) {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

export function fromBase64(text) {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) {
    throw new Error(`not base64: ${text.slice(0, 24)}`);
  }
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

export function leafHash(entry) {
  return sha256(concat(Uint8Array.of(0), entry));
}

export function nodeHash(left, right) {
  return sha256(concat(Uint8Array.of(1), left, right));
}

/** Throws unless `proof` shows the leaf `hash` at `index` in the tree of `size` with head `root`. */
export async function verifyInclusion(hash, index, size, proof, root) {
  let fn = BigInt(index);
  let sn = BigInt(size) - 1n;
  if (fn < 0n || fn > sn) throw new Error(`leaf ${index} cannot be in a tree of ${size}`);
  let computed = hash;
  for (const sibling of proof) {
    if (sn === 0n) throw new Error("the proof is longer than the tree is deep");
    if ((fn & 1n) === 1n || fn === sn) {
      computed = await nodeHash(sibling, computed);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      computed = await nodeHash(computed, sibling);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new Error("the proof is shorter than the tree is deep");
  if (!equal(computed, root)) {
    throw new Error(`leaf ${index} does not lead to the tree head of size ${size}`);
  }
}

/** Throws unless `proof` shows the tree of `newSize` extends the tree of `oldSize`. */
export async function verifyConsistency(oldSize, newSize, oldRoot, newRoot, proof) {
  const m = BigInt(oldSize);
  const n = BigInt(newSize);
  if (m < 0n || m > n) throw new Error(`a tree of ${newSize} cannot extend one of ${oldSize}`);
  if (m === n) {
    if (proof.length) throw new Error("trees of one size need an empty proof");
    if (!equal(oldRoot, newRoot)) throw new Error(`two different trees of size ${oldSize}`);
    return;
  }
  if (m === 0n) {
    if (proof.length) throw new Error("every tree extends the empty one: the proof must be empty");
    return;
  }
  const path = [...proof];
  if ((m & (m - 1n)) === 0n) path.unshift(oldRoot);
  if (!path.length) throw new Error("an empty proof between different sizes");
  let fn = m - 1n;
  let sn = n - 1n;
  while ((fn & 1n) === 1n) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let oldComputed = path[0];
  let newComputed = path[0];
  for (const sibling of path.slice(1)) {
    if (sn === 0n) throw new Error("the proof is longer than the tree is deep");
    if ((fn & 1n) === 1n || fn === sn) {
      oldComputed = await nodeHash(sibling, oldComputed);
      newComputed = await nodeHash(sibling, newComputed);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      newComputed = await nodeHash(newComputed, sibling);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new Error("the proof is shorter than the tree is deep");
  if (!equal(oldComputed, oldRoot)) {
    throw new Error(`the proof does not lead to the old tree head of size ${oldSize}`);
  }
  if (!equal(newComputed, newRoot)) {
    throw new Error(`the proof does not lead to the new tree head of size ${newSize}`);
  }
}

/** A checkpoint's text: its origin, size (a BigInt) and head. */
export function parseCheckpoint(text) {
  const lines = text.split("\n");
  if (lines.length < 4 || lines.at(-1) !== "" || lines.slice(0, -1).some((l) => !l)) {
    throw new Error("a checkpoint is its origin, size and head, one a line");
  }
  const [origin, size, head] = lines;
  if (!/^(0|[1-9][0-9]{0,19})$/.test(size)) throw new Error("a checkpoint's size is a number");
  const root = fromBase64(head);
  if (root.length !== 32) throw new Error("a checkpoint's head is 32 bytes");
  return { origin, size: BigInt(size), root };
}

async function keyId(name, kind, key) {
  return (await sha256(concat(encoder.encode(`${name}\n`), Uint8Array.of(kind), key))).slice(0, 4);
}

/** A published key (`<name>+<key id>+<base64>`), checked and ready to verify with. */
export async function verifierKey(text) {
  const [name, id, encoded, ...rest] = text.trim().split("+");
  const raw = fromBase64([encoded, ...rest].join("+"));
  if (!name || raw.length !== 33 || (raw[0] !== ED25519 && raw[0] !== COSIGNATURE)) {
    throw new Error("a key is <name>+<key id>+<base64 of a type byte and 32 bytes>");
  }
  const kind = raw[0];
  const public_ = raw.slice(1);
  const expected = await keyId(name, kind, public_);
  if ([...expected].map((b) => b.toString(16).padStart(2, "0")).join("") !== id.toLowerCase()) {
    throw new Error(`the key id of ${name} does not match its key`);
  }
  const key = await crypto.subtle.importKey("raw", public_, { name: "Ed25519" }, false, [
    "verify",
  ]);
  return { name, kind, id: expected, key };
}

/** The note's text and who signed it; throws unless a known key's signature verifies, and if a
 * known key's signature does not. */
export async function openNote(note, verifiers) {
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new Error("a note is text, a blank line, signatures");
  const text = note.slice(0, split + 1);
  const signedBy = [];
  const cosignedAt = {};
  for (const line of note.slice(split + 2, -1).split("\n")) {
    if (!line.startsWith(MARK)) throw new Error(`not a signature line: ${line.slice(0, 40)}`);
    const [name, encoded] = line.slice(MARK.length).split(" ");
    const payload = fromBase64(encoded);
    const known = verifiers.find((v) => v.name === name && equal(v.id, payload.slice(0, 4)));
    if (!known) continue;
    if (known.kind === ED25519) {
      const ok = await crypto.subtle.verify("Ed25519", known.key, payload.slice(4), encoder.encode(text));
      if (!ok) throw new Error(`the signature of ${name} does not verify`);
      signedBy.push(name);
    } else {
      if (payload.length !== 76) throw new Error(`the cosignature of ${name} is not 76 bytes`);
      const seconds = new DataView(payload.buffer, 4, 8).getBigUint64(0);
      const message = encoder.encode(`cosignature/v1\ntime ${seconds}\n${text}`);
      const ok = await crypto.subtle.verify("Ed25519", known.key, payload.slice(12), message);
      if (!ok) throw new Error(`the cosignature of ${name} does not verify`);
      cosignedAt[name] = Number(seconds);
    }
  }
  if (!signedBy.length && !Object.keys(cosignedAt).length) {
    throw new Error("no signature of a known key on the note");
  }
  return { text, signedBy, cosignedAt };
}
