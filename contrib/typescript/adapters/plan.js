// The plan a reviewer reads for a tool call, and the arguments an edit of it gives.
//
// One format for every adapter, in Node and in Python (dshq.adapters._plan writes the same
// text and reads it the same way; contrib/adapters-vectors.json holds the cases both check,
// and docs/guide/adapters.md says the rule in words). Why this shape: the page and the
// terminal screen render a plan as Markdown, so the arguments sit in a fenced block (each on
// its own line, shown as typed, never reflowed), and a reviewer edits values in place; the
// adapter reads the edit back by the type each argument had, and an edit it cannot read is
// refused with the reason, never guessed at.

/** A name shown as it is; any other is quoted as a JSON string. */
const SIMPLE = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
// Characters a JSON string escapes that JSON itself does not (DEL, C1, the Unicode line and
// paragraph separators), so that no value can break a line on the screen.
const ESCAPE = /[\u007f-\u009f\u2028\u2029]/g;
// Characters that keep a text out of a plain line (every control but tab), out of a block
// (every control but tab and line feed), and a tool name out of its code span.
const NOT_PLAIN = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/;
const NOT_BLOCK = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
const NOT_NAME = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const FENCE = /^`{3,}$/;
const BLOCKS = ["|", "|-", "|+"];
const EMPTY = "(no arguments)";

const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const trim = (s) => s.replace(/^[ \t]+|[ \t]+$/g, "");
const trimEnd = (s) => s.replace(/[ \t]+$/, "");
const longestTicks = (s) => Math.max(0, ...(s.match(/`+/g) ?? []).map((r) => r.length));

/** An edited plan that does not read back as arguments: `kind` says which rule it breaks. */
export class EditUnreadable extends Error {
  /** `kind`: head, no_block, unclosed, outside, line, twice, not_json, not_string or input. */
  constructor(kind, reason) {
    super(reason);
    this.name = "EditUnreadable";
    this.kind = kind;
    this.reason = reason;
  }
}

/** Compact JSON, with DEL, C1 and the Unicode line separators escaped too. */
export function dump(value) {
  return JSON.stringify(value ?? null).replace(ESCAPE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A tool's name as a person reads it: as it is, or as JSON when it is empty or holds a control character. */
export function shownName(name) {
  const s = String(name);
  return !s || NOT_NAME.test(s) ? dump(s) : s;
}

/** `name` as Markdown inline code (shownName). */
export function codeSpan(name) {
  const shown = shownName(name);
  const ticks = "`".repeat(longestTicks(shown) + 1);
  const pad = shown.startsWith("`") || shown.endsWith("`") ? " " : "";
  return `${ticks}${pad}${shown}${pad}${ticks}`;
}

/** The plan's first line: `whole` when the input is not an object (one `input:` line). */
export function headOf(toolName, whole) {
  return `Run ${codeSpan(toolName)} with${whole ? " the input" : ""}:`;
}

function block(text) {
  let indicator;
  let body;
  if (text.endsWith("\n\n")) [indicator, body] = ["|+", text.slice(0, -1)];
  else if (text.endsWith("\n")) [indicator, body] = ["|", text.slice(0, -1)];
  else [indicator, body] = ["|-", text];
  const lines = body ? body.split("\n") : [];
  return [indicator, ...lines.map((l) => (l ? `  ${l}` : ""))];
}

function valueLines(v) {
  if (typeof v === "string") {
    if (v && !NOT_PLAIN.test(v) && !' \t"|'.includes(v[0]) && !" \t".includes(v[v.length - 1])) return [v];
    if (v.includes("\n") && !NOT_BLOCK.test(v)) return block(v);
  }
  return [dump(v)];
}

/** The plan a reviewer reads (and may edit) for a call of `toolName` with `args`. */
export function renderPlan(toolName, args) {
  const whole = !isPlainObject(args);
  const entries = whole ? [["input", args]] : Object.entries(args);
  const lines = [];
  for (const [name, value] of entries) {
    const [first, ...rest] = valueLines(value);
    lines.push(`${SIMPLE.test(name) ? name : dump(name)}: ${first}`, ...rest);
  }
  const body = lines.length ? lines.join("\n") : EMPTY;
  const fence = "`".repeat(Math.max(3, longestTicks(body) + 1));
  return `${headOf(toolName, whole)}\n\n${fence}\n${body}\n${fence}\n`;
}

// A line's name and the text after its colon.
function split(line, n) {
  const bad = () => new EditUnreadable("line", `line ${n} is not \`name: value\`: ${dump(line)}`);
  if (line.startsWith('"')) {
    let i = 1;
    while (i < line.length && line[i] !== '"') i += line[i] === "\\" ? 2 : 1;
    let name;
    try {
      name = JSON.parse(line.slice(0, i + 1));
    } catch {
      throw bad();
    }
    if (typeof name !== "string" || line.slice(i + 1, i + 2) !== ":") throw bad();
    return [name, line.slice(i + 2)];
  }
  const at = line.indexOf(":");
  if (at < 0 || !SIMPLE.test(line.slice(0, at))) throw bad();
  return [line.slice(0, at), line.slice(at + 1)];
}

// The value of one line (`raw`: after the colon, spaces trimmed) by the type asked.
function value(n, name, raw, asked) {
  const known = Object.hasOwn(asked, name);
  if ((known && typeof asked[name] === "string") || (!known && raw.startsWith('"'))) {
    if (!raw.startsWith('"')) return raw;
    let v;
    try {
      v = JSON.parse(raw);
    } catch {
      v = null;
    }
    if (typeof v === "string") return v;
    throw new EditUnreadable("not_string", `line ${n}: the value of ${dump(name)} starts with '"' and is not a JSON string`);
  }
  try {
    return JSON.parse(raw);
  } catch {
    if (!known) return raw;
    throw new EditUnreadable("not_json", `line ${n}: the value of ${dump(name)} must stay JSON, not ${dump(raw)}`);
  }
}

/**
 * The arguments an edited plan of a call of `toolName` gives; `asked`: the arguments the
 * call was asked with (their types guide the reading). Throws EditUnreadable.
 */
export function parseEdited(text, toolName, asked) {
  const whole = !isPlainObject(asked);
  const original = whole ? { input: asked } : asked;
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  const head = headOf(toolName, whole);
  if (trimEnd(lines[0]) !== head) throw new EditUnreadable("head", `the first line must stay ${dump(head)}: the tool cannot change`);
  let i = 1;
  while (i < lines.length && !trim(lines[i])) i++;
  if (i === lines.length || !FENCE.test(trim(lines[i]))) throw new EditUnreadable("no_block", "the edited plan has no fenced block of arguments");
  const fence = trim(lines[i]);
  const start = i + 1;
  let end = start;
  while (end < lines.length && trim(lines[end]) !== fence) end++;
  if (end === lines.length) throw new EditUnreadable("unclosed", "the fenced block of arguments is not closed");
  for (let j = end + 1; j < lines.length; j++) {
    if (trim(lines[j])) throw new EditUnreadable("outside", `line ${j + 1} is outside the fenced block of arguments`);
  }
  const body = lines.slice(start, end).map((line, j) => [start + j + 1, line]);
  // A Map, so that no name (`__proto__`) is anything but an argument.
  const out = new Map();
  const shown = body.map(([, l]) => trim(l)).filter(Boolean);
  if (!(shown.length === 1 && shown[0] === EMPTY)) {
    let k = 0;
    while (k < body.length) {
      const [n, line] = body[k++];
      if (!trim(line)) continue;
      const [name, rest] = split(line, n);
      const raw = trim(rest);
      if (out.has(name)) throw new EditUnreadable("twice", `line ${n} gives ${dump(name)} a second time`);
      if (BLOCKS.includes(raw)) {
        const lines = [];
        while (k < body.length && (body[k][1].startsWith("  ") || !trim(body[k][1]))) {
          lines.push(body[k][1].startsWith("  ") ? body[k][1].slice(2) : "");
          k++;
        }
        if (raw !== "|+") while (lines.length && !lines[lines.length - 1]) lines.pop();
        let v = lines.join("\n") + (raw === "|" || (raw === "|+" && lines.length) ? "\n" : "");
        if (Object.hasOwn(original, name) && typeof original[name] !== "string") v = value(n, name, v, original);
        out.set(name, v);
      } else {
        out.set(name, value(n, name, raw, original));
      }
    }
  }
  if (whole) {
    if (out.size !== 1 || !out.has("input")) throw new EditUnreadable("input", "the edited input must be the one `input:` line");
    return out.get("input");
  }
  return Object.fromEntries(out);
}
